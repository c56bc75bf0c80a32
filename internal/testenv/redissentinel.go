package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// RedisSentinel is a Sentinel-managed Redis of the test process's own: a
// master, its replica and one Sentinel (quorum 1) on free loopback ports,
// children of the test process like RedisCluster's nodes.
type RedisSentinel struct {
	// Sentinels are the Sentinels' addresses (SECKILL_REDIS_ADDR with
	// SECKILL_REDIS_MASTER); MasterName is the name they know the master by.
	Sentinels  []string
	MasterName string
	*redisProcs
}

// Addr is the Sentinels in SECKILL_REDIS_ADDR's form.
func (s *RedisSentinel) Addr() string { return strings.Join(s.Sentinels, ",") }

// StartRedisSentinel starts a Sentinel-managed master and replica for t,
// stopped when t ends; the Sentinel declares a silent master down after
// one second.
func StartRedisSentinel(t testing.TB) *RedisSentinel {
	t.Helper()
	SkipShort(t, "redis-server (Redis Sentinel)")
	procs, err := newRedisProcs("sentinel")
	if err != nil {
		t.Fatalf("%v", err)
	}
	s := &RedisSentinel{MasterName: "seckill", redisProcs: procs}
	t.Cleanup(s.Stop)
	if err := s.startAll(t); err != nil {
		t.Fatalf("redis sentinel (logs in %s): %v", procs.dir, err)
	}
	return s
}

func (s *RedisSentinel) startAll(t testing.TB) error {
	ports := freePorts(t, 3)
	data := []string{"--appendonly", "yes", "--appendfsync", "everysec", "--save", ""}
	master, err := s.start(ports[0], data...)
	if err != nil {
		return err
	}
	replica, err := s.start(ports[1], append(data, "--replicaof", "127.0.0.1", strconv.Itoa(ports[0]))...)
	if err != nil {
		return err
	}
	// A Sentinel needs a config file it can rewrite.
	conf := filepath.Join(s.dir, "sentinel.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(
		"sentinel monitor %[1]s 127.0.0.1 %[2]d 1\n"+
			"sentinel down-after-milliseconds %[1]s 1000\n"+
			"sentinel failover-timeout %[1]s 10000\n", s.MasterName, ports[0])), 0o644); err != nil {
		return err
	}
	sentinel, err := s.startWith(conf, ports[2], "--sentinel")
	if err != nil {
		return err
	}
	s.Sentinels = []string{sentinel}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.waitNode(ctx, master, func(n *goredis.Client) error { return n.Ping(ctx).Err() }); err != nil {
		return err
	}
	if err := s.waitNode(ctx, replica, func(n *goredis.Client) error {
		repl, err := n.Info(ctx, "replication").Result()
		if err == nil && !strings.Contains(repl, "master_link_status:up") {
			err = fmt.Errorf("replica not in sync yet")
		}
		return err
	}); err != nil {
		return err
	}
	return s.waitNode(ctx, sentinel, func(n *goredis.Client) error {
		v, err := n.Do(ctx, "SENTINEL", "REPLICAS", s.MasterName).Result()
		// RESP3 answers a map, printed "key:value".
		if err == nil && !strings.Contains(fmt.Sprint(v), "master-link-status:ok") {
			err = fmt.Errorf("the Sentinel has not seen the replica in sync yet: %v", v)
		}
		return err
	})
}

// Master asks the Sentinel which address is the master now.
func (s *RedisSentinel) Master(ctx context.Context) (string, error) {
	sc := goredis.NewSentinelClient(&goredis.Options{Addr: s.Sentinels[0]})
	defer sc.Close()
	a, err := sc.GetMasterAddrByName(ctx, s.MasterName).Result()
	if err != nil {
		return "", err
	}
	return strings.Join(a, ":"), nil
}
