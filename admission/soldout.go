package admission

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/tick"
)

// SoldOut remembers, per process, the sessions whose Redis stock reached
// zero, and the items of a sale of several that did, so the flood of
// losers after a sell-out is refused from memory. A watcher re-reads their
// stock a few times a second and lifts the flag as soon as stock comes
// back (timeouts, cancels, an admin rebuild).
type SoldOut struct {
	mu  sync.RWMutex
	ids map[soldKey]keyedMark
	n   atomic.Int32 // len(ids): the common case (nothing sold out) takes no lock
}

// soldKey is what is flagged: a whole sale (sku 0), or one item of a sale
// of several.
type soldKey struct{ id, sku int64 }

// keyedMark is what lets a process answer a keyed request to a sold-out
// session (or item) without asking Redis whether the key holds a
// reservation: the watcher's last read of the stock at zero, in Redis's
// clock, and the sale's latest keyed win as of that read
// (seckill.StockMark; an item's own last win is no later, so the sale's
// is the safe bound). Zero until the watcher has read it (a flag set by
// an admission answer). For an item, "units back on sale" below are units
// back on that item, which the script stamps per item
// (m:reopened:<sku>).
//
// A key stamped (admission.KeyTime) after lastWin + skew cannot hold a
// reservation made up to soldAt: the script refuses keys stamped more than
// the skew ahead of Redis's clock. One stamped by soldAt + skew cannot
// hold one made after it either: a win after soldAt needs units back on
// sale after it, and the script then refuses keys stamped by that return
// + skew. Such a key holding nothing stays refused for the same reason,
// so a SOLD_OUT told now is never contradicted by a win later.
//
// holders are the sale's shoppers who hold or held units, read after
// soldAt while the latest keyed win was lastWin and the latest return of
// stock reopened (nil until read): every pin is a holder's, so a key that
// may have won (stamped by lastWin + skew) but whose shopper is not among
// them holds nothing, and cannot win later either (the reasoning above).
// Stock back since the read (reopened moved) may have sold again, on any
// process, to a shopper the read does not name, with or without a key:
// the read is stale then, as after a keyed win.
type keyedMark struct {
	soldAt, lastWin, reopened time.Time
	holders                   map[int64]struct{}
	loading                   bool
}

// keyedAnswer is how a keyed request to a session flagged sold out is
// answered.
type keyedAnswer int

const (
	keyedScript keyedAnswer = iota // the whole path: the flag may be stale for this key
	keyedPin                       // SOLD_OUT unless its pin (a read) says it won
	keyedMemory                    // SOLD_OUT from memory
)

// answer decides for a key stamped at (zero: a key that carries no time,
// older than everything).
func (m keyedMark) answer(at time.Time) keyedAnswer {
	switch {
	case m.soldAt.IsZero() || at.After(m.soldAt.Add(seckill.KeyClockSkew)):
		return keyedScript
	case !at.IsZero() && at.After(m.lastWin.Add(seckill.KeyClockSkew)):
		return keyedMemory
	default:
		return keyedPin
	}
}

// fromMemory reports whether a request carrying key (empty: none) to
// what k flags is answered SOLD_OUT from memory.
func (s *SoldOut) fromMemory(k soldKey, key string) bool {
	if !s.has(k) {
		return false
	}
	if key == "" {
		return true
	}
	at, ok := KeyTime(key)
	return ok && s.keyed(k, at) == keyedMemory
}

// Any reports whether any session is flagged: the common case, nothing
// sold out, takes no lock and reads nothing of the request.
func (s *SoldOut) Any() bool { return s.n.Load() > 0 }

func (s *SoldOut) has(k soldKey) bool {
	if s.n.Load() == 0 {
		return false
	}
	s.mu.RLock()
	_, ok := s.ids[k]
	s.mu.RUnlock()
	return ok
}

// keyed returns how a keyed request stamped at is answered for what k
// flags; keyedScript when it is not flagged.
func (s *SoldOut) keyed(k soldKey, at time.Time) keyedAnswer {
	if s.n.Load() == 0 {
		return keyedScript
	}
	s.mu.RLock()
	m, ok := s.ids[k]
	s.mu.RUnlock()
	if !ok {
		return keyedScript
	}
	return m.answer(at)
}

// Mark flags session id sold out.
func (s *SoldOut) Mark(id int64) { s.mark(soldKey{id: id}) }

// MarkItem flags item sku of session id sold out: the script refused one
// unit of it for want of stock while the sale still had some.
func (s *SoldOut) MarkItem(id, sku int64) { s.mark(soldKey{id, sku}) }

func (s *SoldOut) mark(k soldKey) {
	s.mu.Lock()
	if s.ids == nil {
		s.ids = map[soldKey]keyedMark{}
	}
	if _, ok := s.ids[k]; !ok {
		s.ids[k] = keyedMark{}
	}
	s.n.Store(int32(len(s.ids)))
	s.mu.Unlock()
}

// Confirm records a read of a flagged session's stock at zero (the
// watcher's, or the admission script's as it sold out), unless a later one
// is already recorded: reads arrive out of order from concurrent batches.
func (s *SoldOut) Confirm(id int64, m seckill.StockMark) { s.confirm(soldKey{id: id}, m) }

func (s *SoldOut) confirm(k soldKey, m seckill.StockMark) {
	s.mu.Lock()
	if old, ok := s.ids[k]; ok && !old.soldAt.After(m.Clock) {
		next := keyedMark{soldAt: m.Clock, lastWin: m.LastKeyedWin, reopened: m.Reopened}
		if old.lastWin.Equal(m.LastKeyedWin) && old.reopened.Equal(m.Reopened) {
			// Nobody won with a key and no stock came back since: the
			// holders read still holds.
			next.holders, next.loading = old.holders, old.loading
		}
		s.ids[k] = next
	}
	s.mu.Unlock()
}

// holds reports whether the holders of what k flags are known, and
// whether user is one of them.
func (s *SoldOut) holds(k soldKey, user int64) (known, holds bool) {
	s.mu.RLock()
	m, ok := s.ids[k]
	s.mu.RUnlock()
	if !ok || m.holders == nil {
		return false, false
	}
	_, holds = m.holders[user]
	return true, holds
}

// startLoad reports whether the caller is to read the holders of what k
// flags: its mark is read, its holders are not, and nobody is reading
// them.
func (s *SoldOut) startLoad(k soldKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.ids[k]
	if !ok || m.soldAt.IsZero() || m.holders != nil || m.loading {
		return false
	}
	m.loading = true
	s.ids[k] = m
	return true
}

// setHolders records a read of the holders of what k flags, with the
// sale's mark as the read saw it (err: none was made). The read is kept
// only if it saw the sale still sold out, the mark's latest keyed win and
// its latest return of stock: a later win, or stock back, makes it stale,
// and the next keyed loser reads again.
func (s *SoldOut) setHolders(k soldKey, users []int64, read seckill.StockMark, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.ids[k]
	if !ok || !m.loading {
		return
	}
	m.loading = false
	if err == nil && read.Stock == 0 && m.lastWin.Equal(read.LastKeyedWin) && m.reopened.Equal(read.Reopened) {
		m.holders = make(map[int64]struct{}, len(users))
		for _, u := range users {
			m.holders[u] = struct{}{}
		}
	}
	s.ids[k] = m
}

// Clear lifts session id's flags, the sale's and its items': its stock or
// its window changed.
func (s *SoldOut) Clear(id int64) {
	s.mu.Lock()
	for k := range s.ids {
		if k.id == id {
			delete(s.ids, k)
		}
	}
	s.n.Store(int32(len(s.ids)))
	s.mu.Unlock()
}

// clear lifts one flag: its stock came back.
func (s *SoldOut) clear(k soldKey) {
	s.mu.Lock()
	delete(s.ids, k)
	s.n.Store(int32(len(s.ids)))
	s.mu.Unlock()
}

func (s *SoldOut) list() []soldKey {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]soldKey, 0, len(s.ids))
	for k := range s.ids {
		out = append(out, k)
	}
	return out
}

// Shopper is an order request's shopper as the sold-out memory asks for
// it, from the request's token (api): only for a key that may have won.
type Shopper struct {
	// Named is the user id the token names, read without checking it,
	// for a token whose check can fail only by time or by proving no one
	// (auth.Shoppers.Named); false for any other.
	Named func() (int64, bool)
	// Verified checks the token: the user id it proves, or why not, and
	// whether the refusal means the token proves no one (auth.Forged).
	Verified func() (id int64, forged bool, err error)
}

// SoldOutFast reports whether an order request to session id (as the
// path gives it) carrying key (empty: none) is answered SOLD_OUT from
// memory, before its body and the handler: after a sell-out nearly every
// request is a loser, and the answer does not depend on who asks (the
// state is public on GET /api/v1/sessions/{id}). Nothing here touches
// stock.
//
// A request with an Idempotency-Key may be the retry of one that won (its
// answer was lost), which a SOLD_OUT would contradict. A UUIDv7 key
// stamped too late to hold a reservation is refused by its time alone
// (keyedMark). One that may have won is refused when its shopper holds
// nothing (holdsNothing), asked of who only for such a key; Buy decides
// the others.
//
// The shopper the token names decides before the token is checked: one
// who holds nothing is refused whatever the token proves. A token naming
// a holder is checked, and one that proves no one is refused the same, so
// a forged token hears SOLD_OUT whoever it names and cannot tell holders
// from the others. A holder's own token goes on (its pin decides), and so
// does one we signed that has expired (the handler answers 401, and the
// shopper signs in again): a winner is never told SOLD_OUT.
func (s *Service) SoldOutFast(id, key string, who Shopper) bool {
	if !s.SoldOut.Any() {
		return false
	}
	sid, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return false
	}
	k := soldKey{id: sid}
	if key == "" {
		return s.SoldOut.has(k)
	}
	at, ok := KeyTime(key)
	if !ok {
		return false
	}
	switch s.SoldOut.keyed(k, at) {
	case keyedMemory:
		return true
	case keyedScript:
		return false
	}
	// The key may have won (keyedPin): its shopper's holdings decide.
	named, byName := who.Named()
	if byName && s.holdsNothing(k, named) {
		return true
	}
	uid, forged, err := who.Verified()
	switch {
	case err != nil:
		return byName && forged
	case byName && uid == named:
		return false // a holder's, or the holders are not read yet
	}
	return s.holdsNothing(k, uid)
}

// keyedLoser reports whether a keyed attempt of user that may have won
// (its key stamped at, by the last keyed win plus the skew) is refused
// SOLD_OUT from memory: its sale is sold out and its shopper holds
// nothing. For a key that carries no time, the pin is looked up.
func (s *Service) keyedLoser(id, user int64, at time.Time) bool {
	k := soldKey{id: id}
	return !at.IsZero() && s.SoldOut.keyed(k, at) == keyedPin && s.holdsNothing(k, user)
}

// holdsNothing reports whether user is known to hold no unit of what k
// flags and to have held none, so has no pin, and the lookup would refuse
// its key SOLD_OUT. The holders are read once per sell-out, in the
// background: until then, and for a holder, the pin is looked up.
func (s *Service) holdsNothing(k soldKey, user int64) bool {
	known, holds := s.SoldOut.holds(k, user)
	if !known && s.SoldOut.startLoad(k) {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), AdmitWait)
			defer cancel()
			users, read, err := s.Stock.Holders(ctx, k.id)
			if err != nil {
				s.Log.Warn("sold-out memory: the sale's holders were not read; its keyed losers are looked up",
					"session_id", k.id, "error", err)
			}
			s.SoldOut.setHolders(k, users, read, err)
		}()
	}
	return known && !holds
}

// watchSoldOut lifts sold-out flags whose session (or item) has stock
// again, or whose session has ended or been paused: those answer ENDED
// or PAUSED (from the session cache, also without I/O), not SOLD_OUT. A
// flag whose stock is still zero gets the read's mark, for keyed
// requests; one whose stock is gone from Redis (-1) is lifted.
func (s *Service) watchSoldOut(ctx context.Context) {
	for _, k := range s.SoldOut.list() {
		if sess, err := s.Sessions.Get(ctx, k.id); err == nil {
			if st := sess.StateAt(s.Now(), 1); st == seckill.SessionEnded || st == seckill.SessionPaused {
				s.SoldOut.Clear(k.id)
				continue
			}
		}
		m, err := s.Stock.StockMark(ctx, k.id, k.sku)
		switch {
		case err != nil:
		case m.Stock == 0:
			s.SoldOut.confirm(k, m)
		default:
			s.SoldOut.clear(k)
		}
	}
}

// Start runs admission's background loops until ctx ends: the blocklist
// refresh (every second) and the sold-out watcher (every SoldOutRecheck,
// so stock that comes back sells again well within a second on every
// process).
func (s *Service) Start(ctx context.Context) {
	if err := s.RefreshBlocklist(ctx); err != nil {
		s.Log.Warn("blocklist load failed; retrying", "error", err)
	}
	go tick.Every(ctx, time.Second, func() {
		if err := s.RefreshBlocklist(ctx); err != nil {
			s.Log.Warn("blocklist refresh failed; keeping the last one", "error", err)
		}
	})
	go tick.Every(ctx, s.SoldOutRecheck, func() { s.watchSoldOut(ctx) })
}
