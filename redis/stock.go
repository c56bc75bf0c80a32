package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// Release gives a reservation's units and the user's slots back, exactly
// once; it returns the units given back (0 when there was nothing to give).
func (g *Gate) Release(ctx context.Context, sessionID int64, orderNo string) (int, error) {
	// Idempotent: deleting the reservation is the script's guard.
	n, err := idempotent(ctx, func(ctx context.Context) (int, error) {
		return releaseScript.Run(ctx, g.rdb, g.keys(sessionID).script(), orderNo).Int()
	})
	if err != nil {
		return 0, unavailable(err)
	}
	return n, nil
}

// StockMark reads a session's stock (sku 0), or one item's of a sale of
// several, together with Redis's clock, the time of the sale's latest
// keyed win and the latest return of that stock, in one atomic step.
func (g *Gate) StockMark(ctx context.Context, sessionID, sku int64) (seckill.StockMark, error) {
	k := g.keys(sessionID)
	v, err := idempotent(ctx, func(ctx context.Context) ([]any, error) {
		return stockMarkScript.Run(ctx, g.rdb, []string{k.stock, k.idem, k.items}, itemRecord(sku)).Slice()
	})
	if err != nil {
		return seckill.StockMark{}, unavailable(err)
	}
	m, ok := stockMark(v)
	if !ok {
		return seckill.StockMark{}, fmt.Errorf("stock mark script returned %v", v)
	}
	return m, nil
}

// stockMark reads a mark as the scripts return it: {clock, stock, latest
// keyed win, reopened}, times in unix ms (0: none).
func stockMark(v []any) (seckill.StockMark, bool) {
	if len(v) != 4 {
		return seckill.StockMark{}, false
	}
	var n [4]int64
	for i := range n {
		x, ok := v[i].(int64)
		if !ok {
			return seckill.StockMark{}, false
		}
		n[i] = x
	}
	return seckill.StockMark{Clock: unixMilli(n[0]), Stock: int(n[1]), LastKeyedWin: unixMilli(n[2]), Reopened: unixMilli(n[3])}, true
}

// unixMilli is the time of a script's unix ms, zero for 0 (none).
func unixMilli(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// Holders reads, in one atomic step, the shoppers who hold or held units
// of a session (admission's sold-out memory answers the keyed losers of
// the others), with the session's mark as of the read: the read holds
// every shopper who won up to its latest keyed win and since its latest
// return of stock. Redis scans the
// sale's idempotency records for it: a few milliseconds for a sale of
// thousands of units, once per sell-out and process.
func (g *Gate) Holders(ctx context.Context, sessionID int64) (users []int64, mark seckill.StockMark, err error) {
	k := g.keys(sessionID)
	v, err := idempotent(ctx, func(ctx context.Context) ([]any, error) {
		return holdersScript.Run(ctx, g.rdb, []string{k.stock, k.buyers, k.idem}).Slice()
	})
	if err != nil {
		return nil, mark, unavailable(err)
	}
	var ok bool
	if len(v) >= 4 {
		mark, ok = stockMark(v[:4])
	}
	if !ok {
		return nil, mark, fmt.Errorf("holders script returned %v", v)
	}
	users = make([]int64, 0, len(v)-4)
	for _, u := range v[4:] {
		s, _ := u.(string)
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, mark, fmt.Errorf("holders script: user %q: %w", s, err)
		}
		users = append(users, id)
	}
	return users, mark, nil
}

// Stock returns the live Redis stock of a session, and whether it was preheated.
func (g *Gate) Stock(ctx context.Context, sessionID int64) (int, bool, error) {
	n, err := idempotent(ctx, func(ctx context.Context) (int, error) { return g.rdb.Get(ctx, g.keys(sessionID).stock).Int() })
	if errors.Is(err, goredis.Nil) {
		return 0, false, nil
	} else if err != nil {
		return 0, false, unavailable(err)
	}
	return n, true, nil
}

// ItemStocks returns a sale of several items' live Redis stock by SKU
// (empty for a single-SKU sale, or one not preheated).
func (g *Gate) ItemStocks(ctx context.Context, sessionID int64) (map[int64]int, error) {
	raw, err := idempotent(ctx, func(ctx context.Context) (map[string]string, error) {
		return g.rdb.HGetAll(ctx, g.keys(sessionID).items).Result()
	})
	if err != nil {
		return nil, unavailable(err)
	}
	out := make(map[int64]int, len(raw))
	for k, v := range raw {
		sku, err1 := strconv.ParseInt(k, 10, 64)
		n, err2 := strconv.Atoi(v)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("session %d item stock %s=%s: %w", sessionID, k, v, err)
		}
		out[sku] = n
	}
	return out, nil
}

// sessionsKey is the set of preheated sessions: where the relay looks for
// pending starts.
func (g *Gate) sessionsKey() string { return g.prefix + ":sessions" }

// Sessions lists the sessions that were preheated and not retired since.
func (g *Gate) Sessions(ctx context.Context) ([]int64, error) {
	vals, err := idempotent(ctx, func(ctx context.Context) ([]string, error) { return g.rdb.SMembers(ctx, g.sessionsKey()).Result() })
	if err != nil {
		return nil, unavailable(err)
	}
	ids := make([]int64, 0, len(vals))
	for _, v := range vals {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Retire lets a session that is over go (retire.lua): its stock at once,
// so that no admission can reach it any more (not even from an API whose
// cached session still shows the sale open), every other key after retain
// (order views, idempotency records and reservations stay readable that
// long); then it leaves the set of preheated sessions, so the relays and
// the scheduled reconcile stop visiting it. False, and nothing changed,
// while a reservation still waits for its workflow start. Idempotent.
func (g *Gate) Retire(ctx context.Context, sessionID int64, retain time.Duration) (bool, error) {
	k := g.keys(sessionID)
	retired, err := idempotent(ctx, func(ctx context.Context) (int, error) {
		return retireScript.Run(ctx, g.rdb, []string{k.stock, k.buyers, k.resv, k.pending, k.idem, k.orders, k.stockOps, k.registrants, k.rights, k.items},
			retain.Milliseconds()).Int()
	})
	if err != nil {
		return false, unavailable(err)
	}
	if retired == 0 {
		return false, nil
	}
	if err := retry(ctx, func(ctx context.Context) error { return g.rdb.SRem(ctx, g.sessionsKey(), sessionID).Err() }); err != nil {
		return false, unavailable(err)
	}
	return true, nil
}

// Preheat loads a session's stock into Redis once (live stock is never
// overwritten) and returns the live stock: PreheatHolding with no stock
// change known to MySQL's figure. For a session no operator added stock
// to (tests, the bench, the demo).
func (g *Gate) Preheat(ctx context.Context, sessionID int64, stock int) (int, error) {
	return g.PreheatHolding(ctx, sessionID, stock, nil, nil)
}

// PreheatHolding loads a session's stock into Redis once and returns the
// live stock. stock, items (each item's stock by SKU in a sale of several,
// nil otherwise) and applied (the request ids of the operators' stock
// changes it holds) come from one MySQL snapshot: an add-stock racing the
// preheat is then counted once, whichever of its halves lands first (see
// preheat.lua).
func (g *Gate) PreheatHolding(ctx context.Context, sessionID int64, stock int, items map[int64]int, applied []string) (int, error) {
	k := g.keys(sessionID)
	if err := retry(ctx, func(ctx context.Context) error { return g.rdb.SAdd(ctx, g.sessionsKey(), sessionID).Err() }); err != nil {
		return 0, unavailable(err)
	}
	args := make([]any, 0, len(applied)+2+2*len(items))
	args = append(args, stock, len(items))
	for sku, n := range items {
		args = append(args, sku, n)
	}
	for _, id := range applied {
		args = append(args, id)
	}
	n, err := idempotent(ctx, func(ctx context.Context) (int, error) {
		return preheatScript.Run(ctx, g.rdb, []string{k.stock, k.stockOps, k.items}, args...).Int()
	})
	if err != nil {
		return 0, unavailable(err)
	}
	return n, nil
}

// AddStock adds units to sess's live stock once per request id (an
// operator's POST /admin/v1/sessions/{id}/stock, after MySQL has them), to
// item skuID's too in a sale of several items (0 otherwise), and returns
// the sale's stock after; -1 when the session is not preheated (its
// preheat will load MySQL's stock, units included). The sale's per-user
// limit tells whether the units reopen it for keys refused before
// (addstock.lua).
func (g *Gate) AddStock(ctx context.Context, sess *seckill.Session, units int, skuID int64, requestID string) (int, error) {
	k := g.keys(sess.ID)
	res, err := idempotent(ctx, func(ctx context.Context) ([]int64, error) {
		return addStockScript.Run(ctx, g.rdb, []string{k.stock, k.stockOps, k.idem, k.items},
			units, requestID, itemRecord(skuID), sess.PerUserLimit).Int64Slice()
	})
	if err != nil {
		return 0, unavailable(err)
	}
	return int(res[1]), nil
}

// Rebuild replaces a session's Redis state with stock (and items, each
// item's stock by SKU in a sale of several, nil otherwise) and the given
// live holdings (orders that hold stock in MySQL), in one MULTI/EXEC. It
// is the forced preheat, used after Redis lost its data: reservations not
// yet turned into orders are dropped with it.
func (g *Gate) Rebuild(ctx context.Context, sessionID int64, stock int, items map[int64]int, holdings []seckill.Reservation) error {
	k := g.keys(sessionID)
	if err := g.rdb.SAdd(ctx, g.sessionsKey(), sessionID).Err(); err != nil {
		return unavailable(err)
	}
	if _, err := g.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error { rebuildIn(ctx, p, k, stock, items, holdings); return nil }); err != nil {
		return unavailable(err)
	}
	return nil
}

// RebuildUnchanged is Rebuild with what decide returns, under WATCH of the
// session's stock and reservations: if anything wrote them while decide
// ran (an admission, a release), nothing is rebuilt and the answer is
// ECONFLICT (see seckill.Rebuilder).
func (g *Gate) RebuildUnchanged(ctx context.Context, sessionID int64,
	decide func(context.Context) (int, map[int64]int, []seckill.Reservation, bool, error)) (bool, error) {
	k := g.keys(sessionID)
	if err := g.rdb.SAdd(ctx, g.sessionsKey(), sessionID).Err(); err != nil {
		return false, unavailable(err)
	}
	var rebuilt bool
	var decideErr error
	err := g.rdb.Watch(ctx, func(tx *goredis.Tx) error {
		stock, items, holdings, ok, err := decide(ctx)
		if err != nil {
			decideErr = err
			return err
		}
		if !ok {
			return nil
		}
		if _, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error { rebuildIn(ctx, p, k, stock, items, holdings); return nil }); err != nil {
			return err
		}
		rebuilt = true
		return nil
	}, k.stock, k.buyers, k.resv, k.pending, k.items)
	switch {
	case errors.Is(err, goredis.TxFailedErr):
		return false, seckill.Errorf(seckill.ECONFLICT, "session %d's Redis state changed while the rebuild was decided; nothing was rebuilt", sessionID)
	case decideErr != nil:
		return false, decideErr
	case err != nil:
		return false, unavailable(err)
	}
	return rebuilt, nil
}

// rebuildIn queues a rebuild of a session's state (see Rebuild) on p.
func rebuildIn(ctx context.Context, p goredis.Pipeliner, k sessionKeys, stock int, items map[int64]int, holdings []seckill.Reservation) {
	p.Del(ctx, k.stock, k.buyers, k.resv, k.pending, k.items)
	p.Set(ctx, k.stock, stock, 0)
	// Units may be back on sale: keys refused before stay refused
	// (admit.lua). This process's clock, a skew ahead of Redis's at
	// worst: a later stamp only refuses more.
	reopened := time.Now().Add(seckill.KeyClockSkew).UnixMilli()
	p.HSet(ctx, k.idem, "m:reopened", reopened)
	for sku, n := range items {
		p.HSet(ctx, k.items, itemRecord(sku), n)
		p.HSet(ctx, k.idem, "m:reopened:"+itemRecord(sku), reopened)
	}
	units := map[int64]int{}
	masks := map[int64]int64{}
	for _, h := range holdings {
		units[h.UserID] += h.Quantity
		masks[h.UserID] |= slotsMask(h.Slots)
		rec := NewReservationRecord(&h)
		if items != nil {
			rec.SKUID = h.SKUID
		}
		p.HSet(ctx, k.resv, h.OrderNo, rec.Encode())
	}
	for u, n := range units {
		p.HSet(ctx, k.buyers, strconv.FormatInt(u, 10), n, fmt.Sprintf("%d:slots", u), masks[u])
	}
}
