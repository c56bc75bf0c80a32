package redis

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// rightsBatch is how many rights one run of rights.lua writes.
const rightsBatch = 1000

// LoadRights writes a draw's granted rights into the hash admission checks
// (registrant: user, or user:sku in a sale of several items → the right's
// end, unix ms). A field keeps the later end and a
// used right ('u') stays used (rights.lua): a user holds one position, so
// a field present is this right written before, perhaps used since, and a
// draw or pass re-run after a crash must not hand a used right back; a
// resume's extension gives the same right a later end.
func (g *Gate) LoadRights(ctx context.Context, sessionID int64, entries []seckill.DrawEntry) error {
	key := []string{g.keys(sessionID).rights}
	args := make([]any, 0, 2*min(len(entries), rightsBatch))
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		err := retry(ctx, func(ctx context.Context) error { return rightsScript.Run(ctx, g.rdb, key, args...).Err() })
		args = args[:0]
		return err
	}
	for _, e := range entries {
		if e.RightUntil.IsZero() {
			continue
		}
		args = append(args, registrant(e.UserID, e.SKUID), e.RightUntil.UnixMilli())
		if len(args) == 2*rightsBatch {
			if err := flush(); err != nil {
				return unavailable(err)
			}
		}
	}
	if err := flush(); err != nil {
		return unavailable(err)
	}
	return nil
}

// Rights is a draw's rights hash as admission sees it: registrant (user,
// or user:sku) → the right's end in unix ms, or "u" once used.
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

// Right is a user's field in a draw's rights hash, for the item skuID (0
// in a single-SKU sale): the right's end in unix ms, "u" once used, ""
// when Redis holds no right for the user.
func (g *Gate) Right(ctx context.Context, sessionID, userID, skuID int64) (string, error) {
	var v string
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		v, err = g.rdb.HGet(ctx, g.keys(sessionID).rights, registrant(userID, skuID)).Result()
		if errors.Is(err, goredis.Nil) {
			v, err = "", nil
		}
		return err
	})
	if err != nil {
		return "", unavailable(err)
	}
	return v, nil
}
