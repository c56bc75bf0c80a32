package redis

import (
	"context"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// LoadRights writes a draw's granted rights into the hash admission checks
// (user → the right's end, unix ms). A field already there is kept
// (HSETNX): a user holds one position, so a field present is this right
// written before, perhaps used since ('u'), and a draw or pass re-run
// after a crash must not hand a used right back.
func (g *Gate) LoadRights(ctx context.Context, sessionID int64, entries []seckill.DrawEntry) error {
	if len(entries) == 0 {
		return nil
	}
	key := g.keys(sessionID).rights
	err := retry(ctx, func(ctx context.Context) error {
		_, err := g.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, e := range entries {
				if !e.RightUntil.IsZero() {
					p.HSetNX(ctx, key, strconv.FormatInt(e.UserID, 10), e.RightUntil.UnixMilli())
				}
			}
			return nil
		})
		return err
	})
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// Rights is a draw's rights hash as admission sees it: user → the right's
// end in unix ms, or "u" once used.
func (g *Gate) Rights(ctx context.Context, sessionID int64) (map[string]string, error) {
	var m map[string]string
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		m, err = g.rdb.HGetAll(ctx, g.keys(sessionID).rights).Result()
		return err
	})
	if err != nil {
		return nil, unavailable(err)
	}
	return m, nil
}
