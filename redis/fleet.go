package redis

import (
	"context"
	_ "embed"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

var (
	//go:embed fleet.lua
	fleetSrc    string
	fleetScript = goredis.NewScript(fleetSrc)
)

// Fleet is the set of live API processes of one deployment (one key prefix),
// kept by heartbeats, so that a budget meant for the whole fleet (the
// global rate limit) can be split among the processes that are up.
type Fleet struct {
	rdb goredis.UniversalClient
	key string
}

// NewFleet returns the fleet of the APIs whose keys start with prefix.
func NewFleet(rdb goredis.UniversalClient, prefix string) *Fleet {
	return &Fleet{rdb: rdb, key: prefix + ":fleet:api"}
}

// Beat says member is alive for ttl more and returns how many members are
// alive, itself included. Idempotent (a heartbeat sent twice is one), so
// retried.
func (f *Fleet) Beat(ctx context.Context, member string, ttl time.Duration) (int, error) {
	n, err := idempotent(ctx, func(ctx context.Context) (int64, error) {
		return fleetScript.Run(ctx, f.rdb, []string{f.key}, member, ttl.Milliseconds()).Int64()
	})
	if err != nil {
		return 0, unavailable(err)
	}
	return int(n), nil
}

// Leave takes member out at once (a clean shutdown), so the others take
// its share without waiting for its heartbeat to lapse.
func (f *Fleet) Leave(ctx context.Context, member string) error {
	if err := retry(ctx, func(ctx context.Context) error { return f.rdb.ZRem(ctx, f.key, member).Err() }); err != nil {
		return unavailable(err)
	}
	return nil
}
