package storetest

import (
	"context"
	"sync"
	"time"

	"github.com/seckill/seckill"
)

type reservation struct {
	seckill.Reservation
	mask uint64 // the user's slots it holds: bit i is slot i+1
}

// MemGate is an in-memory Redis gate of one preheated session: the
// admission script (deduct, reserve, hand out the user's slots, at once)
// and, for the order activities, Release (deleting the reservation is the
// guard, so a second call gives nothing back) and the cached order views
// (the newest kept). TestGate holds it to redis.Gate's behaviour.
type MemGate struct {
	inj *Injector

	mu       sync.Mutex
	session  int64
	stock    int
	resv     map[string]reservation
	held     map[int64]int    // units per user
	masks    map[int64]uint64 // slots per user
	made     map[string]reservation
	released map[string]int // releases that gave units back, per order
	views    map[string]seckill.Order
}

var _ Gate = (*MemGate)(nil)

// NewMemGate returns a gate with session s preheated with its total stock;
// inj (nil for none) injects faults into its calls.
func NewMemGate(inj *Injector, s seckill.Session) *MemGate {
	return &MemGate{inj: inj, session: s.ID, stock: s.TotalStock, resv: map[string]reservation{},
		held: map[int64]int{}, masks: map[int64]uint64{}, made: map[string]reservation{},
		released: map[string]int{}, views: map[string]seckill.Order{}}
}

// Admit is the admission script (admit.lua) for one attempt without an
// Idempotency-Key: the same attempt run again answers as the first run did
// and reserves nothing more.
func (g *MemGate) Admit(_ context.Context, s *seckill.Session, userID int64, qty int, orderNo, traceID string, now time.Time) (*seckill.Reservation, int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	reserved := func(mask uint64) *seckill.Reservation {
		return &seckill.Reservation{OrderNo: orderNo, SessionID: s.ID, UserID: userID, Quantity: qty,
			Slots: slotsOf(mask), ReservedAt: time.UnixMilli(now.UnixMilli()).UTC(), TraceID: traceID}
	}
	if r, ok := g.made[orderNo]; ok {
		if r.UserID == userID && r.Quantity == qty {
			return reserved(r.mask), g.stock, nil
		}
		return nil, g.stock, seckill.Errorf(seckill.ECONFLICT, "order number %s already reserved", orderNo)
	}
	if s.ID != g.session {
		return nil, 0, seckill.Errorf(seckill.EUNAVAILABLE, "session %d is not preheated yet", s.ID)
	}
	if g.stock < qty {
		return nil, g.stock, seckill.Errorf(seckill.ESOLDOUT, "sold out")
	}
	if g.held[userID]+qty > s.PerUserLimit {
		return nil, g.stock, seckill.Errorf(seckill.ELIMIT, "at most %d per shopper in this sale", s.PerUserLimit)
	}
	var mine uint64
	for i, need := 0, qty; i < s.PerUserLimit && need > 0; i++ {
		if b := uint64(1) << i; g.masks[userID]&b == 0 {
			mine |= b
			need--
		}
	}
	g.stock -= qty
	g.held[userID] += qty
	g.masks[userID] |= mine
	r := reservation{Reservation: *reserved(mine), mask: mine}
	g.resv[orderNo], g.made[orderNo] = r, r
	return reserved(mine), g.stock, nil
}

func slotsOf(mask uint64) []int {
	var out []int
	for i := 0; mask != 0; i++ {
		if mask&1 == 1 {
			out = append(out, i+1)
		}
		mask >>= 1
	}
	return out
}

// Release is release.lua: it gives the reservation's units, the user's
// count and slots back, once.
func (g *MemGate) Release(_ context.Context, sessionID int64, orderNo string) (int, error) {
	return step(g.inj, Release, func() (int, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		r, ok := g.resv[orderNo]
		if !ok || sessionID != g.session {
			return 0, nil
		}
		delete(g.resv, orderNo)
		g.stock += r.Quantity
		if g.held[r.UserID] -= r.Quantity; g.held[r.UserID] <= 0 {
			delete(g.held, r.UserID)
		}
		if g.masks[r.UserID] &^= r.mask; g.masks[r.UserID] == 0 {
			delete(g.masks, r.UserID)
		}
		g.released[orderNo]++
		return r.Quantity, nil
	})
}

// PutOrder caches an order's view unless a newer one (by UpdatedAt) is
// cached already.
func (g *MemGate) PutOrder(_ context.Context, o *seckill.Order) error {
	return g.putOrder(o, false)
}

// PutNewOrder is PutOrder for a row as its creation returned it: it also
// loses a tie (see redis.Gate.PutNewOrder). Faults are injected as PutOrder's.
func (g *MemGate) PutNewOrder(_ context.Context, o *seckill.Order) error {
	return g.putOrder(o, true)
}

func (g *MemGate) putOrder(o *seckill.Order, losesTie bool) error {
	_, err := step(g.inj, PutOrder, func() (struct{}, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if v, ok := g.views[o.OrderNo]; ok {
			cached, version := v.UpdatedAt.UnixMicro(), o.UpdatedAt.UnixMicro()
			if cached > version || cached == version && losesTie {
				return struct{}{}, nil
			}
		}
		g.views[o.OrderNo] = *o
		return struct{}{}, nil
	})
	return err
}

// Order returns the cached view of an order, or a QUEUED view made from
// its live reservation; NOT_FOUND when the gate knows neither.
func (g *MemGate) Order(_ context.Context, orderNo string) (*seckill.Order, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.views[orderNo]; ok {
		return &v, nil
	}
	r, ok := g.resv[orderNo]
	if !ok {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
	}
	return &seckill.Order{OrderNo: orderNo, SessionID: r.SessionID, UserID: r.UserID, Quantity: r.Quantity,
		Status: seckill.StatusQueued, CreatedAt: r.ReservedAt, TraceID: r.TraceID}, nil
}

// Stock returns the live stock of a session, and whether it is preheated.
func (g *MemGate) Stock(_ context.Context, sessionID int64) (int, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if sessionID != g.session {
		return 0, false, nil
	}
	return g.stock, true, nil
}

// Releases is how many releases of an order gave units back.
func (g *MemGate) Releases(orderNo string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.released[orderNo]
}

// StockLeft is the session's live stock.
func (g *MemGate) StockLeft() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stock
}

// Live reports whether an order's reservation is still held.
func (g *MemGate) Live(orderNo string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.resv[orderNo]
	return ok
}
