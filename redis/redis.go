// Package redis is the Redis adapter: the fast gate in front of MySQL. It
// holds each session's stock, per-user marks, reservations and
// pending-start entries under one hash tag, changes them only through the
// embedded Lua scripts (so every decision is one atomic step, also on Redis
// Cluster), and caches order views for the hot poll path.
//
// # Retries: decided per command
//
// A reply that does not come back in time (ReadTimeout) leaves the outcome
// unknown: the command may have run. go-redis would send it again by
// itself; NewClient turns that off (MaxRetries -1) and the gate retries
// (retry: up to 4 attempts, 25–250 ms backoff, only on timeouts, dropped
// connections and LOADING/BUSY/TRYAGAIN-like answers) exactly the commands
// that are idempotent:
//
//	command                        idempotent because                          retried
//	admit.lua (Admit*)             same order number → the first run's answer  yes, same order numbers and keys;
//	                               (o: record); same key → the pinned answer   then 503 UNAVAILABLE, outcome unknown
//	                               (k: record)
//	release.lua (Release)          deleting the reservation is its guard       yes
//	putorder.lua (PutOrder)        keeps the newest version only               yes
//	SET NX GET (ConsumeTicket)     the value names the owner; a match is ours  yes
//	reads (Stock, Order, Pending,  reads                                       yes
//	  Pinned, Sessions, Backlog…)
//	ZREM (Started), SADD + SETNX   set semantics                               yes
//	  (Preheat), ZADD XX (Hold)
//	limit.lua (Limiter)            no: every run takes a token                 never: 503, the client retries
//	MULTI rebuild (Rebuild)        no: a re-run would drop reservations made   never: the admin runs it again
//	                               since the first
//	snapshot.lua (SessionSnapshot) a read-only script: one instant per run     yes
//	addstock.lua (AddStock)        the request id is recorded with the units   yes
//	rights.lua (LoadRights)        keeps the later end, and a used mark         yes
//	fleet.lua (Fleet.Beat)         sets the member's expiry; a re-run moves it  yes
//	                               by the retry's delay, well within its ttl
//	ZREM (Fleet.Leave)             set semantics                               yes
//	EXPIRE + SREM (Retire)         a second EXPIRE only restarts the ttl       yes
//	SET, GET (Captchas.Put, Peek)  set and read                                yes
//	GETDEL (Captchas.Take)         no: the first run used the captcha up       never: the shopper fetches a new one
//	HSCAN + HMGET (Unsettled)      reads                                       yes
//
// # Redis Cluster
//
// The client is go-redis's universal one (NewClient): a single node, a
// Cluster or Sentinel failover. Every key a script, MULTI or pipeline
// touches carries the session's hash tag, so each runs on one slot; the
// scripts take all their keys in KEYS. On a Cluster the table above holds
// too: a hook keeps the cluster client from re-sending a command whose
// reply was lost (client.go). docs/ARCHITECTURE.md ("Redis Cluster") lists
// the keys and what a failover can lose.
package redis

import (
	"context"
	_ "embed"
	"fmt"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

var (
	//go:embed admit.lua
	admitSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed putorder.lua
	putOrderSrc string
	//go:embed snapshot.lua
	snapshotSrc string
	//go:embed addstock.lua
	addStockSrc string
	//go:embed preheat.lua
	preheatSrc string
	//go:embed retire.lua
	retireSrc string
	//go:embed stockmark.lua
	stockMarkSrc string
	//go:embed rights.lua
	rightsSrc string
	//go:embed holders.lua
	holdersSrc string
	//go:embed limit.lua
	limitSrc string

	admitScript     = goredis.NewScript(admitSrc)
	releaseScript   = goredis.NewScript(releaseSrc)
	putOrderScript  = goredis.NewScript(putOrderSrc)
	snapshotScript  = goredis.NewScript(snapshotSrc)
	addStockScript  = goredis.NewScript(addStockSrc)
	preheatScript   = goredis.NewScript(preheatSrc)
	retireScript    = goredis.NewScript(retireSrc)
	stockMarkScript = goredis.NewScript(stockMarkSrc)
	rightsScript    = goredis.NewScript(rightsSrc)
	holdersScript   = goredis.NewScript(holdersSrc)
	limitScript     = goredis.NewScript(limitSrc)
)

// Gate is the Redis side of admission.
type Gate struct {
	rdb    goredis.UniversalClient
	prefix string
	// Coalesce batches concurrent admissions of a session into one script
	// call (see admit.go); on by default.
	Coalesce   bool
	coalescers sync.Map // session id → *coalescer
}

// New returns a gate whose keys all start with prefix.
func New(rdb goredis.UniversalClient, prefix string) *Gate {
	return &Gate{rdb: rdb, prefix: prefix, Coalesce: true}
}

// Load preloads the scripts so that admission runs EVALSHA from the first
// request (go-redis falls back to EVAL on NOSCRIPT anyway, e.g. after a
// Redis restart).
func (g *Gate) Load(ctx context.Context) error {
	for _, s := range []*goredis.Script{admitScript, releaseScript, putOrderScript, snapshotScript} {
		if err := s.Load(ctx, g.rdb).Err(); err != nil {
			return unavailable(err)
		}
	}
	return nil
}

// Ping checks that Redis answers.
func (g *Gate) Ping(ctx context.Context) error { return g.rdb.Ping(ctx).Err() }

// sessionKeys are the keys of one session, in the order the scripts take them.
type sessionKeys struct {
	base, stock, buyers, resv, pending, idem, orders, stockOps string
	// registrants is the set of a reserved sale's registered shoppers;
	// rights a draw's rights, user → end in unix ms or 'u' once used;
	// items a sale of several items' stock by SKU (none for one SKU).
	registrants, rights, items string
}

func (g *Gate) keys(sessionID int64) sessionKeys {
	// {s<id>} is the hash tag: every key of a session lands in one slot.
	base := fmt.Sprintf("%s:{s%d}:", g.prefix, sessionID)
	return sessionKeys{base, base + "stock", base + "buyers", base + "resv", base + "pending", base + "idem", base + "orders", base + "stockops", base + "reg", base + "rights", base + "items"}
}

func (k sessionKeys) script() []string {
	return []string{k.stock, k.buyers, k.resv, k.pending, k.idem, k.registrants, k.rights, k.items}
}

// unavailable wraps an infrastructure failure of Redis in the error vocabulary.
func unavailable(err error) error {
	return fmt.Errorf("%w (redis: %v)", seckill.Errorf(seckill.EUNAVAILABLE, "stock service unavailable, retry shortly"), err)
}
