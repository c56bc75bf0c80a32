package redis

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"
)

// DeletePrefix deletes every key under prefix (prefix + ":*"): a test's, a
// soak's or a baseline's scratch keys, never a live sale's. SCAN walks one
// node's keyspace, so on a Redis Cluster it runs on every master
// (ForEachMaster), and each key is deleted on its own (a multi-key DEL
// across slots is CROSSSLOT).
func DeletePrefix(ctx context.Context, rdb goredis.UniversalClient, prefix string) error {
	scan := func(ctx context.Context, node goredis.Cmdable) error {
		var errs []error
		iter := node.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			errs = append(errs, node.Del(ctx, iter.Val()).Err())
		}
		return errors.Join(append(errs, iter.Err())...)
	}
	if c, ok := rdb.(*goredis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error { return scan(ctx, node) })
	}
	return scan(ctx, rdb)
}
