package redis

import (
	"context"
	"strconv"

	"github.com/seckill/seckill"
)

// registrant is a registrant's member of the registrant set and field of
// the rights hash: the user id, and in a sale of several items a colon
// and the item's SKU (admit.lua builds the same from the attempt), so
// that a registration or a right buys its own item only.
func registrant(userID, skuID int64) string {
	s := strconv.FormatInt(userID, 10)
	if skuID != 0 {
		s += ":" + strconv.FormatInt(skuID, 10)
	}
	return s
}

// Register adds a shopper to a reserved sale's registrants, for the item
// skuID (0 in a single-SKU sale), the set the admission script checks.
// Idempotent: a retry adds nothing.
func (g *Gate) Register(ctx context.Context, sessionID, userID, skuID int64) error {
	return g.LoadRegistrants(ctx, sessionID, []seckill.Registrant{{UserID: userID, SKUID: skuID}})
}

// LoadRegistrants adds shoppers to a sale's registrants (the preheat's
// and the rebuild's copy from MySQL, seckill.CopyRegistrants).
func (g *Gate) LoadRegistrants(ctx context.Context, sessionID int64, registrants []seckill.Registrant) error {
	members := make([]any, len(registrants))
	for i, r := range registrants {
		members[i] = registrant(r.UserID, r.SKUID)
	}
	key := g.keys(sessionID).registrants
	if err := retry(ctx, func(ctx context.Context) error { return g.rdb.SAdd(ctx, key, members...).Err() }); err != nil {
		return unavailable(err)
	}
	return nil
}

// Registered reports whether a shopper is among a sale's registrants for
// the item skuID as admission sees them.
func (g *Gate) Registered(ctx context.Context, sessionID, userID, skuID int64) (bool, error) {
	var in bool
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		in, err = g.rdb.SIsMember(ctx, g.keys(sessionID).registrants, registrant(userID, skuID)).Result()
		return err
	})
	if err != nil {
		return false, unavailable(err)
	}
	return in, nil
}
