package bench

import (
	"context"
	"database/sql"
	"fmt"

	_ "github.com/go-sql-driver/mysql" // the stack's MySQL, read once
	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/redis"
)

// Stores are the stack's MySQL and Redis, where the bench reads what a
// reserved sale's registrations weigh (Reserved.MySQLRows, RedisMembers,
// RedisBytes). Read only; the load itself goes through the API.
type Stores struct {
	MySQLDSN    string
	RedisAddr   string // SECKILL_REDIS_ADDR's form
	RedisPrefix string
}

// weigh counts the sale's registration rows in MySQL and measures its
// registrant set in Redis: the one set among the sale's keys (they share
// its hash tag, so on a Redis Cluster they sit on one master).
func (s *Stores) weigh(ctx context.Context, sessionID int64, res *Reserved) error {
	db, err := sql.Open("mysql", s.MySQLDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM registrations WHERE session_id = ?", sessionID).Scan(&res.MySQLRows); err != nil {
		return fmt.Errorf("count the registration rows: %w", err)
	}
	rdb := redis.NewClient(&goredis.UniversalOptions{Addrs: redis.ParseAddrs(s.RedisAddr)})
	defer rdb.Close()
	pattern := fmt.Sprintf("%s:{s%d}:*", s.RedisPrefix, sessionID)
	measure := func(ctx context.Context, node goredis.Cmdable) error {
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			if t, err := node.Type(ctx, iter.Val()).Result(); err != nil || t != "set" {
				continue
			}
			// SAMPLES 0: every member, not an estimate from five.
			bytes, err := node.MemoryUsage(ctx, iter.Val(), 0).Result()
			if err != nil {
				return err
			}
			members, err := node.SCard(ctx, iter.Val()).Result()
			if err != nil {
				return err
			}
			res.RedisBytes, res.RedisMembers = bytes, members
		}
		return iter.Err()
	}
	if c, ok := rdb.(*goredis.ClusterClient); ok {
		err = c.ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error { return measure(ctx, node) })
	} else {
		err = measure(ctx, rdb)
	}
	if err != nil {
		return fmt.Errorf("measure the registrant set: %w", err)
	}
	return nil
}
