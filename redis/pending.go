package redis

import (
	"context"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// Started removes the pending-start entry of a reservation whose workflow
// now exists, so the relay will not look at it again.
func (g *Gate) Started(ctx context.Context, sessionID int64, orderNo string) error {
	if err := retry(ctx, func(ctx context.Context) error {
		return g.rdb.ZRem(ctx, g.keys(sessionID).pending, orderNo).Err()
	}); err != nil {
		return unavailable(err)
	}
	return nil
}

// Hold renews the pending-start entries of orderNos as of at: a starter
// that holds them (queued or in flight) keeps the worker's relay, which
// starts only entries older than its minimum age, away from them. Only
// existing entries are touched (ZADD XX): a start that was confirmed
// meanwhile is not brought back. Idempotent, so retried.
func (g *Gate) Hold(ctx context.Context, sessionID int64, orderNos []string, at time.Time) error {
	if len(orderNos) == 0 {
		return nil
	}
	score := float64(at.UnixMilli())
	members := make([]goredis.Z, len(orderNos))
	for i, no := range orderNos {
		members[i] = goredis.Z{Score: score, Member: no}
	}
	if err := retry(ctx, func(ctx context.Context) error {
		return g.rdb.ZAddXX(ctx, g.keys(sessionID).pending, members...).Err()
	}); err != nil {
		return unavailable(err)
	}
	return nil
}

// Backlog returns how many orders of the session wait for their workflow
// start (its pending-start entries). Not a rank: a held entry's score is
// its last renewal, not its admission, so no order's place in the line can
// be read from it.
func (g *Gate) Backlog(ctx context.Context, sessionID int64) (int, error) {
	n, err := idempotent(ctx, func(ctx context.Context) (int64, error) {
		return g.rdb.ZCard(ctx, g.keys(sessionID).pending).Result()
	})
	if err != nil {
		return 0, unavailable(err)
	}
	return int(n), nil
}

// Pending returns up to limit reservations of a session whose
// pending-start entry is older than before, oldest first: reservations whose
// workflow start may have been lost. An entry whose reservation is gone
// (already released) is dropped.
func (g *Gate) Pending(ctx context.Context, sessionID int64, before time.Time, limit int) ([]seckill.Reservation, error) {
	k := g.keys(sessionID)
	nos, err := idempotent(ctx, func(ctx context.Context) ([]string, error) {
		return g.rdb.ZRangeByScore(ctx, k.pending, &goredis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(before.UnixMilli(), 10), Count: int64(limit),
		}).Result()
	})
	if err != nil {
		return nil, unavailable(err)
	}
	if len(nos) == 0 {
		return nil, nil
	}
	raws, err := idempotent(ctx, func(ctx context.Context) ([]any, error) { return g.rdb.HMGet(ctx, k.resv, nos...).Result() })
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]seckill.Reservation, 0, len(nos))
	for i, no := range nos {
		raw, ok := raws[i].(string)
		if !ok {
			if err := retry(ctx, func(ctx context.Context) error { return g.rdb.ZRem(ctx, k.pending, no).Err() }); err != nil {
				return nil, unavailable(err)
			}
			continue
		}
		r, err := parseReservation(sessionID, no, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// PendingStats returns how many pending-start entries a session has and
// when the oldest was written (zero time when none).
func (g *Gate) PendingStats(ctx context.Context, sessionID int64) (int, time.Time, error) {
	k := g.keys(sessionID)
	n, err := g.rdb.ZCard(ctx, k.pending).Result()
	if err != nil {
		return 0, time.Time{}, unavailable(err)
	}
	if n == 0 {
		return 0, time.Time{}, nil
	}
	first, err := g.rdb.ZRangeWithScores(ctx, k.pending, 0, 0).Result()
	if err != nil || len(first) == 0 {
		return int(n), time.Time{}, unavailable(err)
	}
	return int(n), time.UnixMilli(int64(first[0].Score)).UTC(), nil
}
