// Package admission is the purchase decision behind
// POST /api/v1/sessions/{id}/orders, in one call (Service.Buy), cheapest
// check first: the blocklist, the sale window (a key answered before a
// pause or the end hears that answer again), the sold-out memory, the
// fleet's rate limits (per user, IP and device), the risk check, the
// purchase ticket, then the
// Redis gate's one atomic script; a winner's workflow start is handed to
// the process's starter after the answer, never waited for. A refused
// attempt never touches stock; losers touch neither MySQL nor Temporal.
// The handler decodes the request and encodes the Answer; the ports are
// declared here, named for what admission needs of them.
package admission

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/captcha"
	"github.com/seckill/seckill/metrics"
)

// Sessions give an attempt's session (the process's session cache).
type Sessions interface {
	Get(ctx context.Context, id int64) (*seckill.Session, error)
}

// Stock is the Redis side of admission (redis.Gate).
type Stock interface {
	// AdmitAttempt runs the admission script: the per-user limit, the
	// stock, the deduction and the reservation in one step.
	AdmitAttempt(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error)
	// Pinned is the answer pinned to the attempt's key (nil, nil: none).
	Pinned(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error)
	// PinnedOrRefused is Pinned in a sold-out session: a key without a pin
	// gets the refusal the script would give it.
	PinnedOrRefused(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error)
	// StockMark reads a session's stock (sku 0) or one item's with Redis's
	// clock and the sale's latest keyed win (the sold-out memory's
	// watcher).
	StockMark(ctx context.Context, sessionID, sku int64) (seckill.StockMark, error)
	// Holders reads the shoppers who hold or held units of a session,
	// with its stock and latest keyed win, in one step (the sold-out
	// memory's answer to keyed losers).
	Holders(ctx context.Context, sessionID int64) (users []int64, mark seckill.StockMark, err error)
}

// Starts takes a winner's workflow start without waiting (the process's
// starter); false when its queue is full.
type Starts interface {
	Offer(req *seckill.OrderRequest) bool
}

// Config is what a Service is built from.
type Config struct {
	Sessions Sessions
	Stock    Stock
	Starts   Starts
	// Blocklist is the blocklist's truth (MySQL), copied into memory.
	Blocklist Blocklist
	// Tickets remembers the purchase tickets used.
	Tickets Tickets
	// Captchas keeps the answers of the captchas of sessions that require
	// one (every API process shares it); nil: such sessions answer 503.
	Captchas captcha.Store
	// Limits are the fleet's rate limits of a shopper's calls.
	Limits Limits
	// Risk is the check before admission.
	Risk RiskConfig
	// Secrets are the JWT secrets of a rotation, the signing one first:
	// tickets and device cookies are keyed with keys derived from them.
	Secrets [][]byte
	// PayTimeout is each order's (its workflow's input).
	PayTimeout time.Duration
	// SoldOutRecheck is how often the sold-out memory re-reads the stock
	// of the sessions it holds (200ms by default).
	SoldOutRecheck time.Duration
	Now            func() time.Time
	Log            *slog.Logger
	Metrics        *metrics.Metrics
}

// Service decides purchase attempts (New).
type Service struct {
	Config
	// SoldOut is the process's memory of sold-out sessions.
	SoldOut SoldOut
	blocked blocklist
	// ticketKeys and deviceKeys sign tickets and device cookies: the
	// first signs, any verifies (one per JWT secret of a rotation).
	ticketKeys, deviceKeys [][]byte
	risk                   riskCaches
}

// New builds a Service; what is unset takes its default (the risk
// check's durations, the clock, the log, a fresh set of metrics).
func New(c Config) *Service {
	c.Risk.defaults()
	if c.SoldOutRecheck <= 0 {
		c.SoldOutRecheck = 200 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = metrics.New()
	}
	return &Service{Config: c, ticketKeys: derivedKeys(c.Secrets, ticketPurpose),
		deviceKeys: derivedKeys(c.Secrets, devicePurpose), risk: newRiskCaches()}
}

// Request is a purchase attempt as the handler decoded it.
type Request struct {
	SessionID int64
	UserID    int64
	Quantity  int
	// SKUID is the item bought: required in a sale of several items, 0
	// (or the sale's own) in a single-SKU sale.
	SKUID int64
	// IdempotencyKey ("" when none) outlives the request: a batch of the
	// gate may pin it after the handler stopped waiting.
	IdempotencyKey string
	TraceID        string
	// SpanID is the purchase's span when it is traced (Attempt.SpanID).
	SpanID string
	// What the front door knows of the caller: its address (LimitIP the
	// one its per-IP limit counts against), its User-Agent, its device
	// cookie and ticket as sent ("" when none). Read during Buy only.
	IP, LimitIP  netip.Addr
	UserAgent    []byte
	DeviceCookie string
	Ticket       string
	// device is DeviceCookie's id once the device limit read it (the risk
	// check asks about it).
	device string
}

// Answer is what an attempt is told: its admission (202, the order number
// holding its units) or its refusal; Layer names the check that decided
// ("" for a refusal of the input or the stores), RetryAfter when to retry
// a refusal that says so.
type Answer struct {
	Admission  *seckill.Admission
	Err        error
	Layer      string
	RetryAfter time.Duration
}

// Layers that decide an attempt (the X-Seckill-Layer header).
const (
	LayerBlocklist = "blocklist"
	LayerWindow    = "window"
	LayerRateLimit = "rate_limit"
	LayerRisk      = "risk"
	LayerRedis     = "redis" // the admission script: accepted, SOLD_OUT or LIMIT_EXCEEDED
	// LayerSoldOutMemory: SOLD_OUT from this process's memory of the
	// sell-out (SoldOut), of the sale or of the item asked for.
	LayerSoldOutMemory = "soldout_memory"
)

// ErrSoldOut is the answer from the sold-out memory.
var ErrSoldOut = seckill.Errorf(seckill.ESOLDOUT, "sold out")

// Buy decides a purchase attempt, cheapest check first.
//
// With an Idempotency-Key, the script pins a reservation to the key in
// the same atomic step, and answers a later attempt with that key from the
// pin. A refused key is not stored (losers cost Redis nothing) and stays
// refused by its time (seckill.KeyClockSkew). Refusals before the script
// (validation, the blocklist, rate limits, the ticket, not started,
// UNAVAILABLE) leave nothing behind either: the request never ran, and its
// retry runs afresh. After a sell-out, a pause or the end of the sale, a
// keyed request is answered from memory or from its pin (a read), never
// by the script.
func (s *Service) Buy(ctx context.Context, r *Request) Answer {
	sess, ans := s.shopperSession(ctx, r)
	if ans.Err != nil {
		return ans
	}
	if _, err := sess.Item(r.SKUID); err != nil {
		return Answer{Err: err}
	}
	a := &seckill.Attempt{Session: sess, UserID: r.UserID, Quantity: r.Quantity, TraceID: r.TraceID, SpanID: r.SpanID, Now: s.Now(),
		IdempotencyKey: r.IdempotencyKey, Fingerprint: strconv.Itoa(r.Quantity)}
	if sess.Several() {
		// The item is part of the body a key was pinned with; a
		// single-SKU sale's is implied, named or not.
		a.SKUID, a.Fingerprint = r.SKUID, a.Fingerprint+":"+strconv.FormatInt(r.SKUID, 10)
	}
	a.KeyTime, _ = KeyTime(r.IdempotencyKey)
	if ans, pinned := s.Window(ctx, a); pinned {
		return s.decided(a, ans)
	} else if ans.Err != nil {
		if seckill.ErrorCode(ans.Err) != seckill.EINVALID {
			ans.Layer = LayerWindow
		}
		return ans
	}
	// An item sold out on its own: its losers are answered from memory
	// as the sale's are once it is (SoldOutFast), a keyed one once the
	// watcher read the item at zero.
	item := soldKey{id: sess.ID, sku: a.SKUID}
	if a.SKUID != 0 && s.SoldOut.fromMemory(item, r.IdempotencyKey) {
		return Answer{Err: ErrSoldOut, Layer: LayerSoldOutMemory}
	}
	if r.IdempotencyKey != "" && (s.SoldOut.keyed(soldKey{id: sess.ID}, a.KeyTime) == keyedPin ||
		a.SKUID != 0 && s.SoldOut.keyed(item, a.KeyTime) == keyedPin) {
		// SoldOutFast let it through: it may hold a reservation. Its pin
		// says (one read, no rate limits: nothing is decided); without
		// one it gets the refusal the script would give it, and stays
		// refused (keyedMark). A key too new for this process's mark goes
		// on to the script.
		if a.Quantity <= sess.PerUserLimit && s.keyedLoser(sess.ID, r.UserID, a.KeyTime) {
			return Answer{Err: ErrSoldOut, Layer: LayerSoldOutMemory}
		}
		return s.decided(a, s.Pin(ctx, a))
	}
	// A reserved sale ran the device limit, the risk check and the ticket
	// at registration; at its start only registrants get past the script.
	if ans := s.limit(ctx, r, !sess.Registers()); ans.Err != nil {
		return ans
	}
	if !sess.Registers() {
		if ans := s.Screen(ctx, r, a); ans.Err != nil {
			return ans
		}
	}
	t0 := time.Now()
	ans = s.Admit(ctx, a)
	s.Metrics.RedisAdmit.Observe(metrics.Since(t0))
	return s.decided(a, ans)
}

// shopperSession is r's session for a shopper not on the blocklist.
func (s *Service) shopperSession(ctx context.Context, r *Request) (*seckill.Session, Answer) {
	if s.blocked.has(r.UserID) {
		return nil, Answer{Err: ErrBlocked, Layer: LayerBlocklist}
	}
	sess, err := s.Sessions.Get(ctx, r.SessionID)
	if err != nil {
		return nil, Answer{Err: err}
	}
	return sess, Answer{}
}

// Blocklist is the blocklist's truth (MySQL); every process keeps a copy
// in memory, refreshed every second, so the 403 costs no round trip.
type Blocklist interface {
	BlockedUsers(ctx context.Context) ([]int64, error)
}

// ErrBlocked refuses a blocked shopper.
var ErrBlocked = seckill.Errorf(seckill.EFORBIDDEN, "this account may not buy")

// RefreshBlocklist reloads the memory's copy of the blocklist.
func (s *Service) RefreshBlocklist(ctx context.Context) error {
	ids, err := s.Blocklist.BlockedUsers(ctx)
	if err != nil {
		return err
	}
	s.blocked.replace(ids)
	return nil
}

// blocklist is the set of blocked users, held in memory.
type blocklist struct {
	set atomic.Pointer[map[int64]struct{}]
}

func (b *blocklist) has(user int64) bool {
	m := b.set.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[user]
	return ok
}

func (b *blocklist) replace(ids []int64) {
	m := make(map[int64]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	b.set.Store(&m)
}

// Screen checks who makes the attempt: the risk check, then the ticket
// when the session requires one. A first-come sale screens at admission,
// a reserved one at registration.
func (s *Service) Screen(ctx context.Context, r *Request, a *seckill.Attempt) Answer {
	if len(s.Risk.UserAgentDeny) > 0 || s.Risk.Checker != nil {
		if ans := s.riskCheck(ctx, r, a); ans.Err != nil {
			return ans
		}
	}
	if a.Session.RequireTicket {
		if err := s.useTicket(ctx, r, a); err != nil {
			return Answer{Err: err}
		}
	}
	return Answer{}
}

// decided is the gate's answer (the script's, or a pin's), remembered
// when it says the session sold out, with the script's mark of the
// sell-out: keyed losers are answered from memory from the sell-out on,
// not from the watcher's next read.
func (s *Service) decided(a *seckill.Attempt, ans Answer) Answer {
	ans.Layer = LayerRedis
	adm := ans.Admission
	switch soldOut := ans.Err == nil || seckill.ErrorCode(ans.Err) == seckill.ESOLDOUT; {
	case adm == nil || !soldOut:
	case adm.Left <= 0:
		s.SoldOut.Mark(a.Session.ID)
		if adm.SoldOut != nil {
			s.SoldOut.Confirm(a.Session.ID, *adm.SoldOut)
		}
	case ans.Err != nil && a.SKUID != 0 && a.Quantity == 1:
		// The sale has stock, this item none: not even one unit.
		s.SoldOut.MarkItem(a.Session.ID, a.SKUID)
	}
	return ans
}

// AdmitWait bounds how long an attempt waits for its admission, queue and
// retries included; past it the answer is UNAVAILABLE, the outcome unknown
// until the retry with the same key.
const AdmitWait = 3 * time.Second

// Window refuses an attempt outside its session's sale window (not
// started, ended, paused) and a quantity the session does not allow. A
// keyed attempt refused ENDED or PAUSED whose key was answered before
// gets that answer again instead (pinned is true): 202 with the order its
// reservation holds, so the shopper does not believe they lost while
// their order waits for payment, or its pinned refusal.
func (s *Service) Window(ctx context.Context, a *seckill.Attempt) (ans Answer, pinned bool) {
	sess := a.Session
	err := Open(sess, a.Now)
	if code := seckill.ErrorCode(err); code == seckill.EENDED || code == seckill.EPAUSED {
		if adm, perr := s.Stock.Pinned(ctx, a); adm != nil || perr != nil {
			return s.answer(a, adm, perr), true
		}
	}
	if err != nil {
		return Answer{Err: err}, false
	}
	if a.Quantity < 1 || a.Quantity > sess.PerUserLimit {
		return Answer{Err: seckill.Errorf(seckill.EINVALID, "quantity must be between 1 and %d", sess.PerUserLimit)}, false
	}
	return Answer{}, false
}

// Open refuses what is done in a session outside its sale window, and
// while an operator paused it: NOT_STARTED, ENDED, PAUSED.
func Open(s *seckill.Session, now time.Time) error {
	switch s.StateAt(now, 1) {
	case seckill.SessionUpcoming:
		return seckill.Errorf(seckill.ENOTSTARTED, "session %d starts at %s", s.ID, s.StartAt.Format(time.RFC3339))
	case seckill.SessionEnded:
		return seckill.Errorf(seckill.EENDED, "session %d ended at %s", s.ID, s.EndAt.Format(time.RFC3339))
	case seckill.SessionPaused:
		return seckill.Errorf(seckill.EPAUSED, "session %d is paused; try again later", s.ID)
	}
	return nil
}

// Pin answers a keyed attempt in a session known to be sold out from
// its pin (one read, nothing decided): the reservation it holds, or the
// refusal the script would give it.
func (s *Service) Pin(ctx context.Context, a *seckill.Attempt) Answer {
	adm, err := s.Stock.PinnedOrRefused(ctx, a)
	return s.answer(a, adm, err)
}

// Admit gives the attempt an order number and runs the admission script,
// waiting at most AdmitWait. A winner's order is handed to the starter
// before Admit returns (accept), as is a replayed one's in Window and
// Pin.
func (s *Service) Admit(ctx context.Context, a *seckill.Attempt) Answer {
	a.OrderNo = seckill.NewOrderNo(a.Session.ID)
	ctx, cancel := context.WithTimeout(ctx, AdmitWait)
	defer cancel()
	adm, err := s.Stock.AdmitAttempt(ctx, a)
	return s.answer(a, adm, err)
}

// answer is the gate's answer to a, its order handed on when admitted.
func (s *Service) answer(a *seckill.Attempt, adm *seckill.Admission, err error) Answer {
	switch {
	case err == nil && adm == nil:
		// A pin lookup without a key answers nothing; never an answer.
		err = fmt.Errorf("admission: the gate gave attempt %s no answer", a.TraceID)
	case err == nil:
		s.accept(a, adm)
	}
	return Answer{Admission: adm, Err: err}
}

// accept hands an admitted attempt's order to the starter as its answer
// leaves: on a replay, the pinned order, whose workflow is
// started again if its reservation still waits (the start is idempotent).
// The answer never waits for Temporal: the reservation and its
// pending-start entry, written by the script, are the durable intent; a
// full queue leaves the order to the pending-start outbox, which the API's
// outbox relay drains a few seconds later (and the worker's relay behind
// it). The workflow ID is the order number, so a start is never doubled.
func (s *Service) accept(a *seckill.Attempt, adm *seckill.Admission) {
	if adm.Replayed {
		s.Log.Info("order replayed for its idempotency key", "trace_id", a.TraceID, "order_no", adm.OrderNo,
			"session_id", a.Session.ID, "user_id", a.UserID)
	} else {
		// One line per winner (bounded by the stock, unlike the losers):
		// where following a purchase by its trace id starts.
		s.Log.Info("order accepted", "trace_id", a.TraceID, "span_id", a.SpanID, "order_no", adm.OrderNo, "session_id", a.Session.ID,
			"user_id", a.UserID, "quantity", a.Quantity)
	}
	if adm.Reservation == nil {
		return
	}
	req := seckill.NewOrderRequest(*adm.Reservation, a.Session, s.PayTimeout)
	if !s.Starts.Offer(req) {
		s.Log.Warn("starter queue full; the order's start is left to the outbox", "order_no", req.OrderNo, "trace_id", req.TraceID)
	}
}
