package redis

import (
	"context"
)

// Register adds a shopper to a reserved sale's registrants, the set the
// admission script checks. Idempotent: a retry adds nothing.
func (g *Gate) Register(ctx context.Context, sessionID, userID int64) error {
	return g.LoadRegistrants(ctx, sessionID, []int64{userID})
}

// LoadRegistrants adds shoppers to a sale's registrants (the preheat's
// and the rebuild's copy from MySQL, seckill.CopyRegistrants).
func (g *Gate) LoadRegistrants(ctx context.Context, sessionID int64, users []int64) error {
	members := make([]any, len(users))
	for i, u := range users {
		members[i] = u
	}
	key := g.keys(sessionID).registrants
	if err := retry(ctx, func(ctx context.Context) error { return g.rdb.SAdd(ctx, key, members...).Err() }); err != nil {
		return unavailable(err)
	}
	return nil
}

// Registered reports whether a shopper is among a sale's registrants as
// admission sees them.
func (g *Gate) Registered(ctx context.Context, sessionID, userID int64) (bool, error) {
	var in bool
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		in, err = g.rdb.SIsMember(ctx, g.keys(sessionID).registrants, userID).Result()
		return err
	})
	if err != nil {
		return false, unavailable(err)
	}
	return in, nil
}
