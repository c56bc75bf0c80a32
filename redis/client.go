package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Server is where Redis is and how to reach it (SECKILL_REDIS_ADDR,
// SECKILL_REDIS_MASTER, SECKILL_REDIS_PASSWORD, SECKILL_REDIS_TLS), read
// by go-redis's universal rules: one address is a single node, several
// are the seeds of a Redis Cluster, and with MasterName they are the
// Sentinels that name the master.
type Server struct {
	Addrs      []string
	MasterName string
	// Password is the data nodes' (not the Sentinels').
	Password string
	// TLS, when set, dials every node with it (the system's roots or a
	// private CA, and a client certificate for tls-auth-clients).
	TLS *tls.Config
}

// ParseAddrs splits a comma-separated address list (SECKILL_REDIS_ADDR),
// dropping blanks.
func ParseAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Options are the universal options that reach s.
func (s Server) Options() *goredis.UniversalOptions {
	o := &goredis.UniversalOptions{Addrs: s.Addrs, MasterName: s.MasterName, Password: s.Password}
	if s.TLS != nil {
		// go-redis fills ServerName from each node's address.
		o.TLSConfig = s.TLS.Clone()
	}
	return o
}

// NewClient returns a go-redis universal client (a single node, a Redis
// Cluster or Sentinel-managed failover, by go-redis's rules on o.Addrs and
// o.MasterName) that never re-sends a command by itself (MaxRetries -1,
// whatever o says). go-redis retries a command after a read timeout by
// default: for a script that changed something, the second run then
// answers about a world the first run already changed (the first reserved,
// the second says LIMIT_EXCEEDED). Which commands are retried, and how, is
// decided here per command instead (see retry and the table in the package
// comment). Every process (api, worker, dev, the tests) builds its client
// through this.
//
// On a Redis Cluster two things are added (see clusterHooks): go-redis's
// cluster client re-sends after a lost reply within its redirect budget,
// which MaxRetries does not govern, and it keeps dialling a dead master
// until its periodic slot-map reload, long after a replica took over.
func NewClient(o *goredis.UniversalOptions) goredis.UniversalClient {
	opts := *o
	opts.MaxRetries = -1
	rdb := goredis.NewUniversalClient(&opts)
	if c, ok := rdb.(*goredis.ClusterClient); ok {
		c.OnNewNode(func(node *goredis.Client) { node.AddHook(noResend{}) })
		c.AddHook(reloadOnLoss{c})
	}
	return rdb
}

// AdmissionPoolSize is the Redis connection pool of a process that admits
// shoppers, per node: one connection per request in flight on the hot
// path of a sale.
const AdmissionPoolSize = 256

// NewAdmissionClient is the client of a process that admits shoppers (the
// API, and the bench's admission-only baseline, which must cost what the
// API does): admission is one short script per request, so many
// connections and small timeouts. On a Cluster the pool is per node.
func NewAdmissionClient(s Server) goredis.UniversalClient {
	o := s.Options()
	o.PoolSize = AdmissionPoolSize
	o.MinIdleConns = 16
	o.ReadTimeout = 500 * time.Millisecond
	o.WriteTimeout = 500 * time.Millisecond
	return NewClient(o)
}

// replyLost is a command's failure after it may have reached Redis (a
// timeout or a dropped connection once the command was written). It hides
// the network error from go-redis's cluster client, which would otherwise
// send the command again to the same or another node (its retry loop runs
// within MaxRedirects and ignores MaxRetries): the limiter's script would
// take a second token, a rebuild run twice. It does not unwrap, on purpose;
// retryable knows it, so the idempotent commands are still retried by
// retry, as on a single node.
type replyLost struct{ err error }

func (e *replyLost) Error() string { return e.err.Error() }

// noResend is the hook of each cluster node's client that turns a lost
// reply into replyLost. A failed dial is left alone: the command never
// left, and go-redis may try it on another node.
type noResend struct{}

func (noResend) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (noResend) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error { return hideLoss(next(ctx, cmd)) }
}

func (noResend) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error { return hideLoss(next(ctx, cmds)) }
}

func hideLoss(err error) error {
	var op *net.OpError
	if err == nil || !connectionLost(err) || (errors.As(err, &op) && op.Op == "dial") {
		return err
	}
	return &replyLost{err}
}

// reloadOnLoss asks the cluster client to re-read the slot map after a
// command failed on the connection. go-redis re-reads it on MOVED, but a
// killed master answers nothing: without this the client keeps dialling
// it until the periodic reload (every 60 s, redis/go-redis#3979) while a
// replica has long taken its slots over. The reload is lazy and
// coalesced (one at a time, 200 ms apart), so a storm of failures costs
// one CLUSTER SLOTS every 200 ms at most.
type reloadOnLoss struct{ c *goredis.ClusterClient }

func (h reloadOnLoss) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h reloadOnLoss) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error { return h.check(ctx, next(ctx, cmd)) }
}

func (h reloadOnLoss) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error { return h.check(ctx, next(ctx, cmds)) }
}

func (h reloadOnLoss) check(ctx context.Context, err error) error {
	if err != nil && (connectionLost(err) || notNow(err)) {
		h.c.ReloadState(ctx)
	}
	return err
}
