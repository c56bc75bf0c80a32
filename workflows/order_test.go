package workflows_test

// Workflow tests of OrderWorkflow on Temporal's test suite. The suite's
// clock skips timers, so the 15-minute pay timer (and hours of activity
// retries) cost no wall time.
//
// The REAL activities (activities.Activities, registered through
// worker.Register under their explicit names) run against an in-memory
// Store (MySQL) and Gate (Redis) written below. The fakes model the adapters'
// contracts faithfully: CreateOrder idempotent on order_no and FAILED when
// the database stock is short; CloseOrder a compare-and-set WAIT_PAY→CLOSED
// that gives stock back once, or a CLOSED tombstone when no row exists;
// ApplyPayment capturing, refunding or de-duplicating; Release giving
// units back at most once. They also inject faults (an error before the
// commit, or a commit whose response is lost, i.e. an activity timeout) and
// run hooks inside an activity (to cancel the workflow or deliver a signal
// while a step is in flight).
//
// Every test that sells ends with assertInvariants: the stock equations of
// DESIGN.md on both sides, compensation exactly once per closed order and
// never for a paid one, one captured payment per PAID order.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/worker"
	"github.com/seckill/seckill/workflows"
)

const (
	testSession = int64(7)
	testSKU     = int64(42)
	testPrice   = int64(1999)
	payTimeout  = 15 * time.Minute
)

// startTime is the workflow clock at the start of each test. It is the real
// time: the test environment checks local-activity deadlines (CreateOrder)
// against the wall clock, so a start in the past would expire them.
var startTime = time.Now().UTC().Truncate(time.Second)

// Names of the fake calls that faults and hooks can target.
const (
	mCreate  = "store.CreateOrder"
	mClose   = "store.CloseOrder"
	mApply   = "store.ApplyPayment"
	mOrder   = "store.Order"
	mRelease = "gate.Release"
	mPut     = "gate.PutOrder"
)

// ---------------------------------------------------------------------------
// Fault injection

// fault makes one call of a fake fail: before its effect (the database was
// down), or after it (the commit happened but the answer never reached the
// workflow: what an activity timeout looks like to the caller).
type fault struct {
	err         error
	afterCommit bool
}

func transient() fault {
	return fault{err: seckill.Errorf(seckill.EUNAVAILABLE, "injected: dependency unavailable")}
}

func lostResponse() fault {
	return fault{err: fmt.Errorf("injected: response lost after commit: %w", context.DeadlineExceeded), afterCommit: true}
}

func times(n int, f fault) []fault {
	out := make([]fault, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// hooks run inside a fake call (on the activity's goroutine): before its
// effect and after it. call counts from 1.
type hooks struct {
	before, after func(call int)
}

type injector struct {
	mu     sync.Mutex
	calls  map[string]int
	done   map[string]int
	plans  map[string][]fault
	sticky map[string]fault
	hooks  map[string]hooks
}

func newInjector() *injector {
	return &injector{calls: map[string]int{}, done: map[string]int{}, plans: map[string][]fault{},
		sticky: map[string]fault{}, hooks: map[string]hooks{}}
}

// failNext makes the next len(fs) calls of method fail, one fault each.
func (in *injector) failNext(method string, fs ...fault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.plans[method] = append(in.plans[method], fs...)
}

// failAlways makes every call of method fail until heal.
func (in *injector) failAlways(method string, f fault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.sticky[method] = f
}

func (in *injector) heal(method string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.sticky, method)
	delete(in.plans, method)
}

func (in *injector) on(method string, h hooks) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.hooks[method] = h
}

func (in *injector) count(method string) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.calls[method]
}

func (in *injector) finished(method string) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.done[method]
}

func (in *injector) enter(method string) (int, fault, hooks) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.calls[method]++
	f, ok := in.sticky[method]
	if !ok && len(in.plans[method]) > 0 {
		f, in.plans[method] = in.plans[method][0], in.plans[method][1:]
	}
	return in.calls[method], f, in.hooks[method]
}

func (in *injector) exit(method string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.done[method]++
}

// step runs body as one call of method with its fault and hooks applied.
// Hooks run outside every lock, so they may block or call into the test
// environment.
func step[T any](in *injector, method string, body func() (T, error)) (T, error) {
	call, f, h := in.enter(method)
	defer in.exit(method)
	var zero T
	if h.before != nil {
		h.before(call)
	}
	if f.err != nil && !f.afterCommit {
		return zero, f.err
	}
	v, err := body()
	if err != nil {
		return zero, err
	}
	if h.after != nil {
		h.after(call)
	}
	if f.err != nil {
		return zero, f.err
	}
	return v, nil
}

// ---------------------------------------------------------------------------
// Fake MySQL store

type storedPayment struct {
	seckill.Payment
	captured bool // false: waits for its refund
}

type fakeStore struct {
	inj *injector

	mu          sync.Mutex
	total       int
	stock       int
	orders      map[string]*seckill.Order
	reasons     map[string]string
	payments    []storedPayment
	decremented map[string]int // stock taken by CreateOrder, per order
	restored    map[string]int // stock given back by CloseOrder, per order
}

var _ activities.Store = (*fakeStore)(nil)

func newFakeStore(inj *injector, total int) *fakeStore {
	return &fakeStore{inj: inj, total: total, stock: total, orders: map[string]*seckill.Order{},
		reasons: map[string]string{}, decremented: map[string]int{}, restored: map[string]int{}}
}

func copyOrder(o *seckill.Order) *seckill.Order { c := *o; return &c }

// CreateOrder: idempotent on order_no; WAIT_PAY with the stock decremented,
// or FAILED (nothing decremented) when the conditional decrement refuses.
func (s *fakeStore) CreateOrder(_ context.Context, req *seckill.OrderRequest, payDeadline time.Time) (*seckill.Order, error) {
	return step(s.inj, mCreate, func() (*seckill.Order, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if o, ok := s.orders[req.OrderNo]; ok {
			return copyOrder(o), nil // a retry, or a tombstone: never a second decrement
		}
		if req.SessionID != testSession || s.stock < req.Quantity {
			o := req.Order(seckill.StatusFailed, time.Time{})
			s.orders[req.OrderNo], s.reasons[req.OrderNo] = o, "db_sold_out"
			return copyOrder(o), nil
		}
		s.stock -= req.Quantity
		s.decremented[req.OrderNo] += req.Quantity
		o := req.Order(seckill.StatusWaitPay, payDeadline.UTC())
		s.orders[req.OrderNo], s.reasons[req.OrderNo] = o, "created"
		return copyOrder(o), nil
	})
}

type closeResult struct {
	status   seckill.Status
	gaveBack bool
}

// CloseOrder: CAS WAIT_PAY→CLOSED giving the units back in the same step;
// any other status is returned unchanged; no row → CLOSED tombstone.
func (s *fakeStore) CloseOrder(_ context.Context, req *seckill.OrderRequest, reason string) (seckill.Status, bool, error) {
	r, err := step(s.inj, mClose, func() (closeResult, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		o, ok := s.orders[req.OrderNo]
		if !ok {
			s.orders[req.OrderNo] = req.Order(seckill.StatusClosed, time.Time{})
			s.reasons[req.OrderNo] = reason
			return closeResult{status: seckill.StatusClosed}, nil
		}
		if o.Status != seckill.StatusWaitPay {
			return closeResult{status: o.Status}, nil
		}
		o.Status, s.reasons[req.OrderNo] = seckill.StatusClosed, reason
		s.stock += o.Quantity
		s.restored[req.OrderNo] += o.Quantity
		return closeResult{status: seckill.StatusClosed, gaveBack: true}, nil
	})
	return r.status, r.gaveBack, err
}

type applyResult struct {
	outcome seckill.PaymentOutcome
	status  seckill.Status
}

// ApplyPayment mirrors mysql.DB.ApplyPayment: duplicates change nothing, a
// wrong amount is refused, WAIT_PAY→PAID captures, CLOSED→REFUND_PENDING,
// any other status keeps the order and queues the payment for a refund.
func (s *fakeStore) ApplyPayment(_ context.Context, p *seckill.Payment) (seckill.PaymentOutcome, seckill.Status, error) {
	r, err := step(s.inj, mApply, func() (applyResult, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		o, ok := s.orders[p.OrderNo]
		if !ok {
			return applyResult{}, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", p.OrderNo)
		}
		for _, q := range s.payments {
			if q.PaymentID == p.PaymentID || q.EventID == p.EventID {
				return applyResult{seckill.PaymentDuplicate, o.Status}, nil
			}
		}
		if p.AmountCents != o.AmountCents {
			return applyResult{}, seckill.Errorf(seckill.EAMOUNT, "amount_cents %d does not match the order's %d", p.AmountCents, o.AmountCents)
		}
		switch o.Status {
		case seckill.StatusWaitPay:
			s.payments = append(s.payments, storedPayment{Payment: *p, captured: true})
			o.Status, s.reasons[o.OrderNo] = seckill.StatusPaid, "paid"
			return applyResult{seckill.PaymentCaptured, o.Status}, nil
		case seckill.StatusClosed:
			s.payments = append(s.payments, storedPayment{Payment: *p})
			o.Status, s.reasons[o.OrderNo] = seckill.StatusRefundPending, "late_payment"
			return applyResult{seckill.PaymentRefundPending, o.Status}, nil
		default:
			s.payments = append(s.payments, storedPayment{Payment: *p})
			return applyResult{seckill.PaymentRefundPending, o.Status}, nil
		}
	})
	return r.outcome, r.status, err
}

func (s *fakeStore) Order(_ context.Context, orderNo string) (*seckill.Order, error) {
	return step(s.inj, mOrder, func() (*seckill.Order, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		o, ok := s.orders[orderNo]
		if !ok {
			return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
		}
		return copyOrder(o), nil
	})
}

// seed stores an order that already holds stock, without Redis knowing it
// (Redis lost its data: the drift that makes MySQL refuse an admission).
func (s *fakeStore) seed(req seckill.OrderRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stock -= req.Quantity
	s.decremented[req.OrderNo] += req.Quantity
	s.orders[req.OrderNo] = req.Order(seckill.StatusWaitPay, startTime.Add(payTimeout))
}

func (s *fakeStore) status(orderNo string) seckill.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.orders[orderNo]; ok {
		return o.Status
	}
	return ""
}

func (s *fakeStore) reason(orderNo string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reasons[orderNo]
}

func (s *fakeStore) counts(orderNo string) (decremented, restored int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decremented[orderNo], s.restored[orderNo]
}

func (s *fakeStore) stockLeft() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stock
}

// paymentsOf returns the payment ids of an order: captured, and waiting for
// their refund.
func (s *fakeStore) paymentsOf(orderNo string) (captured, refunds []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.payments {
		if p.OrderNo != orderNo {
			continue
		}
		if p.captured {
			captured = append(captured, p.PaymentID)
		} else {
			refunds = append(refunds, p.PaymentID)
		}
	}
	return captured, refunds
}

// ---------------------------------------------------------------------------
// Fake Redis gate

type reservation struct {
	userID int64
	qty    int
}

type fakeGate struct {
	inj *injector

	mu       sync.Mutex
	total    int
	stock    int
	resv     map[string]reservation
	held     map[int64]int
	admitted map[string]bool
	released map[string]int // releases that gave units back, per order
	views    map[string]seckill.Order
}

var _ activities.Gate = (*fakeGate)(nil)

func newFakeGate(inj *injector, total int) *fakeGate {
	return &fakeGate{inj: inj, total: total, stock: total, resv: map[string]reservation{}, held: map[int64]int{},
		admitted: map[string]bool{}, released: map[string]int{}, views: map[string]seckill.Order{}}
}

// admit is the admission script: deduct and record the reservation at once.
func (g *fakeGate) admit(orderNo string, userID int64, qty int) (seckill.Reservation, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stock < qty {
		return seckill.Reservation{}, seckill.Errorf(seckill.ESOLDOUT, "sold out")
	}
	if _, ok := g.resv[orderNo]; ok {
		return seckill.Reservation{}, seckill.Errorf(seckill.ECONFLICT, "order number taken")
	}
	g.stock -= qty
	g.held[userID] += qty
	g.resv[orderNo] = reservation{userID: userID, qty: qty}
	g.admitted[orderNo] = true
	slots := make([]int, qty)
	for i := range slots {
		slots[i] = g.held[userID] - qty + i + 1
	}
	return seckill.Reservation{OrderNo: orderNo, SessionID: testSession, UserID: userID, Quantity: qty,
		Slots: slots, ReservedAt: startTime, TraceID: "trace-" + orderNo}, nil
}

// Release is release.lua: deleting the reservation is the guard, so a
// second call gives nothing back.
func (g *fakeGate) Release(_ context.Context, sessionID int64, orderNo string) (int, error) {
	return step(g.inj, mRelease, func() (int, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		r, ok := g.resv[orderNo]
		if !ok || sessionID != testSession {
			return 0, nil
		}
		delete(g.resv, orderNo)
		g.stock += r.qty
		if g.held[r.userID] -= r.qty; g.held[r.userID] <= 0 {
			delete(g.held, r.userID)
		}
		g.released[orderNo]++
		return r.qty, nil
	})
}

func (g *fakeGate) PutOrder(_ context.Context, o *seckill.Order) error {
	_, err := step(g.inj, mPut, func() (struct{}, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.views[o.OrderNo] = *o
		return struct{}{}, nil
	})
	return err
}

func (g *fakeGate) releases(orderNo string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.released[orderNo]
}

func (g *fakeGate) stockLeft() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stock
}

func (g *fakeGate) live(orderNo string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.resv[orderNo]
	return ok
}

// ---------------------------------------------------------------------------
// Harness

type harness struct {
	t     *testing.T
	env   *testsuite.TestWorkflowEnvironment
	inj   *injector
	store *fakeStore
	gate  *fakeGate
	acts  *activities.Activities

	saMu     sync.Mutex
	saStatus []string // OrderStatus values upserted, in order
}

func newHarness(t *testing.T, total int) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(startTime)
	inj := newInjector()
	h := &harness{t: t, env: env, inj: inj, store: newFakeStore(inj, total), gate: newFakeGate(inj, total)}
	h.acts = &activities.Activities{Store: h.store, Gate: h.gate}
	worker.Register(env, h.acts)
	// The test environment keeps search attributes to itself; a mock on the
	// upsert is the supported way to observe them.
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa, ok := args.Get(0).(temporal.SearchAttributes)
		if !assert.True(t, ok, "upsert argument is %T", args.Get(0)) {
			return
		}
		assert.Equal(t, 1, sa.Size(), "only OrderStatus changes after the start")
		v, ok := sa.GetKeyword(workflows.OrderStatusKey)
		assert.True(t, ok, "upsert without OrderStatus")
		h.saMu.Lock()
		h.saStatus = append(h.saStatus, v)
		h.saMu.Unlock()
	}).Return(nil)
	return h
}

// admit wins a reservation in Redis and returns the workflow input the API
// would start OrderWorkflow with.
func (h *harness) admit(orderNo string, userID int64, qty int) seckill.OrderRequest {
	h.t.Helper()
	r, err := h.gate.admit(orderNo, userID, qty)
	require.NoError(h.t, err)
	return seckill.OrderRequest{Reservation: r, SKUID: testSKU, PriceCents: testPrice, PayTimeout: payTimeout}
}

func payment(req seckill.OrderRequest, id string) seckill.Payment {
	return seckill.Payment{EventID: "evt-" + id, PaymentID: id, OrderNo: req.OrderNo,
		AmountCents: req.AmountCents(), TraceID: "trace-" + id}
}

// execute runs the workflow to its end, started the way the API starts it.
func (h *harness) execute(req seckill.OrderRequest) {
	h.t.Helper()
	require.NoError(h.t, h.env.SetTypedSearchAttributesOnStart(workflows.SearchAttributes(&req)))
	h.env.ExecuteWorkflow(workflows.OrderWorkflowName, req)
	require.True(h.t, h.env.IsWorkflowCompleted(), "workflow did not complete")
}

// run executes the workflow and returns its final state; it must not fail.
func (h *harness) run(req seckill.OrderRequest) workflows.OrderState {
	h.t.Helper()
	h.execute(req)
	require.NoError(h.t, h.env.GetWorkflowError())
	var st workflows.OrderState
	require.NoError(h.t, h.env.GetWorkflowResult(&st))
	return st
}

func (h *harness) signalAt(d time.Duration, name string, arg any) {
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(name, arg) }, d)
}

// queryAt records the state query's answer at workflow time d.
func (h *harness) queryAt(d time.Duration) *workflows.OrderState {
	st := &workflows.OrderState{}
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(workflows.StateQuery)
		if assert.NoError(h.t, err) {
			assert.NoError(h.t, v.Get(st))
		}
	}, d)
	return st
}

// details is the workflow's current details, as the Web UI reads them
// (the SDK's built-in metadata query).
func (h *harness) details() string {
	h.t.Helper()
	v, err := h.env.QueryWorkflow("__temporal_workflow_metadata")
	require.NoError(h.t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(h.t, v.Get(&md))
	return md.GetCurrentDetails()
}

func (h *harness) query() workflows.OrderState {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(workflows.StateQuery)
	require.NoError(h.t, err)
	var st workflows.OrderState
	require.NoError(h.t, v.Get(&st))
	return st
}

func (h *harness) statuses() []string {
	h.saMu.Lock()
	defer h.saMu.Unlock()
	return slices.Clone(h.saStatus)
}

// waitFor blocks (in an activity hook) until cond holds; it fails the test
// rather than hang.
func (h *harness) waitFor(what string, cond func() bool) {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			assert.Fail(h.t, "timed out waiting for "+what)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// assertInvariants checks DESIGN.md's invariants on the fakes.
func (h *harness) assertInvariants() {
	t := h.t
	t.Helper()
	s, g := h.store, h.gate
	s.mu.Lock()
	defer s.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()

	held := 0
	for no, o := range s.orders {
		captured := 0
		for _, p := range s.payments {
			if p.OrderNo == no && p.captured {
				captured++
			}
		}
		dec, res, rel := s.decremented[no], s.restored[no], g.released[no]
		assert.LessOrEqual(t, dec, o.Quantity, "%s: stock taken more than once", no)
		switch {
		case o.Status.HoldsStock():
			held += o.Quantity
			assert.Zero(t, res, "%s (%s): stock given back for an order that holds it", no, o.Status)
			assert.Zero(t, rel, "%s (%s): Redis released for an order that holds stock", no, o.Status)
			if g.admitted[no] {
				assert.Contains(t, g.resv, no, "%s (%s): its Redis reservation must stay live", no, o.Status)
			}
		case o.Status == seckill.StatusFailed:
			assert.Zero(t, dec, "%s: FAILED order took stock", no)
			assert.Zero(t, rel, "%s: FAILED order's Redis stock must not be restored (drift)", no)
		default: // CLOSED, REFUND_PENDING, REFUNDED: compensated
			assert.Equal(t, dec, res, "%s (%s): DB stock must come back exactly once", no, o.Status)
			if g.admitted[no] {
				assert.Equal(t, 1, rel, "%s (%s): Redis reservation must be released exactly once", no, o.Status)
			}
		}
		if o.Status == seckill.StatusPaid {
			assert.Equal(t, 1, captured, "%s: a PAID order has exactly one captured payment", no)
		} else {
			assert.Zero(t, captured, "%s (%s): captured payment on an unpaid order", no, o.Status)
		}
		if v, ok := g.views[no]; ok {
			assert.Equal(t, o.Status, v.Status, "%s: cached view disagrees with the row", no)
		}
	}
	for _, p := range s.payments {
		assert.Contains(t, s.orders, p.OrderNo, "payment %s for an unknown order", p.PaymentID)
	}
	assert.GreaterOrEqual(t, s.stock, 0, "db stock went negative")
	assert.Equal(t, s.total, s.stock+held, "db_stock + Σqty(WAIT_PAY, PAID) = total")
	live := 0
	for _, r := range g.resv {
		live += r.qty
	}
	assert.Equal(t, g.total, g.stock+live, "redis_stock + Σqty(live reservations) = total")
	for no, n := range g.released {
		assert.LessOrEqual(t, n, 1, "%s released twice", no)
	}
}

// assertCompensated checks that the order closed and gave its stock back
// on both sides exactly once.
func (h *harness) assertCompensated(req seckill.OrderRequest, st workflows.OrderState, reason string) {
	h.t.Helper()
	assert.Equal(h.t, seckill.StatusClosed, st.Status)
	assert.Equal(h.t, reason, st.CloseReason)
	assert.Equal(h.t, seckill.StatusClosed, h.store.status(req.OrderNo))
	assert.Equal(h.t, reason, h.store.reason(req.OrderNo))
	assert.Equal(h.t, h.store.total, h.store.stockLeft(), "all DB stock back")
	assert.Equal(h.t, h.gate.total, h.gate.stockLeft(), "all Redis stock back")
	assert.Equal(h.t, 1, h.gate.releases(req.OrderNo))
	assert.False(h.t, h.gate.live(req.OrderNo))
}

// ---------------------------------------------------------------------------
// Tests

// (1) A payment before the pay deadline makes the order PAID; nothing is
// given back, the Redis reservation stays live (it is now a sale), the state
// query and the OrderStatus search attribute say PAID.
func TestOrderPaidBeforeTimeout(t *testing.T) {
	cases := []struct {
		name  string
		pay   func(h *harness, p seckill.Payment)
		waits bool // the order sits in WAIT_PAY for a while
	}{
		{"paid after 3 minutes", func(h *harness, p seckill.Payment) {
			h.signalAt(3*time.Minute, workflows.PaymentSignal, p)
		}, true},
		{"paid 1ns before the deadline", func(h *harness, p seckill.Payment) {
			h.signalAt(payTimeout-time.Nanosecond, workflows.PaymentSignal, p)
		}, true},
		{"paid while the row is still being created", func(h *harness, p seckill.Payment) {
			// The signal is buffered while CreateOrder runs; it must not be
			// lost nor applied before the row exists.
			h.inj.on(mCreate, hooks{before: func(int) { h.env.SignalWorkflow(workflows.PaymentSignal, p) }})
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 10)
			req := h.admit("7-paid", 1001, 2)
			p := payment(req, "pay-1")
			tc.pay(h, p)
			waiting := h.queryAt(time.Second)
			var waitingDetails string
			h.env.RegisterDelayedCallback(func() { waitingDetails = h.details() }, time.Second)

			st := h.run(req)

			if tc.waits {
				assert.Equal(t, seckill.StatusWaitPay, waiting.Status, "query while waiting")
				assert.True(t, waiting.PayDeadline.Equal(startTime.Add(payTimeout)), "deadline %v", waiting.PayDeadline)
				assert.Contains(t, waitingDetails, "**WAIT_PAY** · order `7-paid` · user 1001")
				assert.Contains(t, waitingDetails, "waiting for payment until "+startTime.Add(payTimeout).UTC().Format(time.RFC3339))
			}
			assert.Contains(t, h.details(), "**PAID** · order `7-paid`")
			assert.Contains(t, h.details(), "paid with `pay-1`")
			assert.Equal(t, seckill.StatusPaid, st.Status)
			assert.Equal(t, "pay-1", st.PaymentID)
			assert.Empty(t, st.CloseReason)
			assert.Empty(t, st.LatePayments)
			assert.Equal(t, st, h.query(), "state query agrees with the result")
			// (At 1ns before the deadline the test clock may deliver the
			// signal and the timer in one workflow task; the payment must win.)
			assert.False(t, h.env.Now().After(startTime.Add(payTimeout)), "ended at +%v", h.env.Now().Sub(startTime))

			assert.Equal(t, seckill.StatusPaid, h.store.status(req.OrderNo))
			captured, refunds := h.store.paymentsOf(req.OrderNo)
			assert.Equal(t, []string{"pay-1"}, captured)
			assert.Empty(t, refunds)
			assert.Zero(t, h.inj.count(mClose), "no compensation for a paid order")
			assert.Zero(t, h.inj.count(mRelease), "no release for a paid order")
			assert.True(t, h.gate.live(req.OrderNo))
			assert.Equal(t, 8, h.store.stockLeft())
			assert.Equal(t, 8, h.gate.stockLeft())
			assert.Equal(t, []string{"PAID"}, h.statuses())
			h.assertInvariants()
		})
	}
}

// (2) Without a payment, the pay timer (15m by default, a workflow input)
// closes the order at its deadline, not before, and gives the DB stock and
// the Redis reservation back exactly once.
func TestOrderTimeoutClosesAndGivesBackOnce(t *testing.T) {
	cases := []struct {
		name     string
		timeout  time.Duration
		deadline time.Duration
	}{
		{"15 minutes", 15 * time.Minute, 15 * time.Minute},
		{"zero input defaults to 15 minutes", 0, seckill.DefaultPayTimeout},
		{"short test timeout", 45 * time.Second, 45 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 10)
			req := h.admit("7-timeout", 1002, 3)
			req.PayTimeout = tc.timeout
			justBefore := h.queryAt(tc.deadline - time.Millisecond)

			st := h.run(req)

			assert.Equal(t, seckill.StatusWaitPay, justBefore.Status, "must still wait 1ms before the deadline")
			assert.True(t, st.PayDeadline.Equal(startTime.Add(tc.deadline)), "deadline %v", st.PayDeadline)
			assert.False(t, h.env.Now().Before(startTime.Add(tc.deadline)), "closed before the deadline")
			h.assertCompensated(req, st, workflows.ReasonTimeout)
			assert.Contains(t, h.details(), "**CLOSED** · order `7-timeout`")
			assert.Contains(t, h.details(), "closed: pay_timeout, stock given back")
			dec, res := h.store.counts(req.OrderNo)
			assert.Equal(t, 3, dec)
			assert.Equal(t, 3, res)
			assert.Equal(t, 1, h.inj.count(mClose))
			assert.Equal(t, 1, h.inj.count(mRelease))
			assert.Equal(t, []string{"CLOSED"}, h.statuses())
			h.assertInvariants()
		})
	}
}

// (3) A cancel signal (shopper or ops) closes an unpaid order right away
// with compensation, also when it arrives before the row exists.
func TestOrderCancelSignal(t *testing.T) {
	cases := []struct {
		name   string
		cancel func(h *harness)
	}{
		{"cancelled after 2 minutes", func(h *harness) {
			h.signalAt(2*time.Minute, workflows.CancelSignal, workflows.CancelRequest{Reason: "shopper", TraceID: "t"})
		}},
		{"cancelled while the row is being created", func(h *harness) {
			h.inj.on(mCreate, hooks{before: func(int) {
				h.env.SignalWorkflow(workflows.CancelSignal, workflows.CancelRequest{Reason: "shopper"})
			}})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 5)
			req := h.admit("7-cancel", 1003, 1)
			tc.cancel(h)

			st := h.run(req)

			h.assertCompensated(req, st, workflows.ReasonCancelled)
			assert.True(t, h.env.Now().Before(startTime.Add(payTimeout)), "cancel must not wait for the timer")
			assert.Equal(t, 1, h.inj.count(mClose))
			assert.Equal(t, 1, h.inj.count(mRelease))
			assert.Equal(t, []string{"CLOSED"}, h.statuses())
			h.assertInvariants()
		})
	}
}

// (4) The race between the payment and the pay timer: whatever the order of
// arrival around the deadline, the order ends PAID xor CLOSED with its stock
// back — never both, never neither. A payment that loses the race is never
// applied to a closed order: it becomes REFUND_PENDING (in the workflow when
// it is still running, or through the webhook's direct path once it ended).
//
// A payment before the deadline always wins: even when the test clock hands
// the signal and the timer to the workflow in one task, the selector takes
// the payment first. For the same reason a payment that arrives just after
// the deadline, before the workflow task that carries the timer ran, may
// still win (the test clock fires timer callbacks asynchronously, so this
// happens here too): those cases accept either outcome but never both.
func TestOrderPaymentRacesTimeout(t *testing.T) {
	type want int
	const (
		either want = iota
		wantPaid
		wantClosed
	)
	cases := []struct {
		name string
		at   time.Duration // when the payment arrives; <0: during the compensation
		want want
	}{
		{"1s before the deadline", payTimeout - time.Second, wantPaid},
		{"1ns before the deadline", payTimeout - time.Nanosecond, wantPaid},
		{"exactly at the deadline", payTimeout, either},
		{"1ns after the deadline", payTimeout + time.Nanosecond, either},
		{"1s after the deadline", payTimeout + time.Second, either},
		{"while CloseOrder runs", -1, wantClosed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 4)
			req := h.admit("7-race", 1004, 2)
			p := payment(req, "pay-race")
			deliver := func() { h.env.SignalWorkflow(workflows.PaymentSignal, p) }
			if tc.at < 0 {
				h.inj.on(mClose, hooks{before: func(int) { deliver() }})
			} else {
				h.env.RegisterDelayedCallback(deliver, tc.at)
			}

			st := h.run(req)

			captured, refunds := h.store.paymentsOf(req.OrderNo)
			inWorkflow := len(captured)+len(refunds) > 0
			if !inWorkflow {
				// The workflow ended before the signal reached it: the signal
				// gets NotFound and the webhook records the payment in MySQL
				// itself, then refreshes the cached view (api/webhook.go).
				outcome, status, err := h.store.ApplyPayment(context.Background(), &p)
				require.NoError(t, err)
				assert.Equal(t, seckill.PaymentRefundPending, outcome)
				assert.Equal(t, seckill.StatusRefundPending, status)
				o, err := h.store.Order(context.Background(), p.OrderNo)
				require.NoError(t, err)
				require.NoError(t, h.gate.PutOrder(context.Background(), o))
				captured, refunds = h.store.paymentsOf(req.OrderNo)
			}

			dec, res := h.store.counts(req.OrderNo)
			paid := h.store.status(req.OrderNo) == seckill.StatusPaid
			closedWithStockBack := res == dec && dec == 2 && h.gate.releases(req.OrderNo) == 1
			require.True(t, paid != closedWithStockBack, "paid=%v closed=%v: exactly one outcome", paid, closedWithStockBack)
			t.Logf("delivered in workflow=%v, paid=%v, workflow status %s", inWorkflow, paid, st.Status)
			switch tc.want {
			case wantPaid:
				require.True(t, paid)
			case wantClosed:
				require.False(t, paid)
			}
			if paid {
				assert.Equal(t, seckill.StatusPaid, st.Status)
				assert.Equal(t, []string{"pay-race"}, captured)
				assert.Empty(t, refunds)
				assert.Zero(t, h.inj.count(mClose))
				assert.Equal(t, []string{"PAID"}, h.statuses())
			} else {
				assert.Equal(t, seckill.StatusRefundPending, h.store.status(req.OrderNo), "a late payment never reopens")
				assert.Empty(t, captured)
				assert.Equal(t, []string{"pay-race"}, refunds)
				assert.Equal(t, workflows.ReasonTimeout, st.CloseReason)
				assert.Equal(t, h.store.total, h.store.stockLeft())
				assert.Equal(t, h.gate.total, h.gate.stockLeft())
				if inWorkflow {
					assert.Equal(t, seckill.StatusRefundPending, st.Status)
					assert.Equal(t, []string{"pay-race"}, st.LatePayments)
					assert.Equal(t, []string{"CLOSED", "REFUND_PENDING"}, h.statuses())
				} else {
					assert.Equal(t, seckill.StatusClosed, st.Status)
					assert.Equal(t, []string{"CLOSED"}, h.statuses())
				}
			}
			h.assertInvariants()
		})
	}
}

// (4b) A cancel and a payment in the same instant: one decision wins, the
// other is absorbed (a cancel after PAID is dropped; a payment after the
// close is refunded).
func TestOrderCancelAndPaymentSameInstant(t *testing.T) {
	for _, order := range []string{"cancel first", "payment first"} {
		t.Run(order, func(t *testing.T) {
			h := newHarness(t, 3)
			req := h.admit("7-both", 1005, 1)
			p := payment(req, "pay-both")
			h.env.RegisterDelayedCallback(func() {
				if order == "cancel first" {
					h.env.SignalWorkflow(workflows.CancelSignal, workflows.CancelRequest{Reason: "shopper"})
					h.env.SignalWorkflow(workflows.PaymentSignal, p)
				} else {
					h.env.SignalWorkflow(workflows.PaymentSignal, p)
					h.env.SignalWorkflow(workflows.CancelSignal, workflows.CancelRequest{Reason: "shopper"})
				}
			}, 5*time.Minute)

			st := h.run(req)

			paid := h.store.status(req.OrderNo) == seckill.StatusPaid
			_, res := h.store.counts(req.OrderNo)
			gaveBack := res == 1 && h.gate.releases(req.OrderNo) == 1
			require.True(t, paid != gaveBack, "paid=%v gaveBack=%v", paid, gaveBack)
			t.Logf("outcome: %s", st.Status)
			if !paid {
				assert.Equal(t, seckill.StatusRefundPending, st.Status)
				assert.Equal(t, []string{"pay-both"}, st.LatePayments)
			}
			h.assertInvariants()
		})
	}
}

// (5) Duplicate and extra payments: a replay of the same payment (same
// payment id or same event id) changes nothing; a second, different payment
// after PAID waits for its refund and the order stays PAID; a refused
// payment (wrong amount) does not block a later good one.
func TestOrderDuplicatePayments(t *testing.T) {
	type delivery struct {
		at time.Duration
		p  func(req seckill.OrderRequest) seckill.Payment
	}
	pay := func(id string) func(seckill.OrderRequest) seckill.Payment {
		return func(req seckill.OrderRequest) seckill.Payment { return payment(req, id) }
	}
	cases := []struct {
		name       string
		deliveries []delivery
		paidBy     string
		late       []string // LatePayments of the workflow state
		refunds    []string // payments waiting for a refund in the store
		applied    int      // ApplyPayment calls
	}{
		{
			name:       "same payment twice",
			deliveries: []delivery{{3 * time.Minute, pay("pay-1")}, {3 * time.Minute, pay("pay-1")}},
			paidBy:     "pay-1", applied: 2,
		},
		{
			name: "same event id under another payment id",
			deliveries: []delivery{{3 * time.Minute, pay("pay-1")}, {3 * time.Minute, func(req seckill.OrderRequest) seckill.Payment {
				p := payment(req, "pay-1b")
				p.EventID = "evt-pay-1"
				return p
			}}},
			paidBy: "pay-1", applied: 2,
		},
		{
			name:       "a second different payment after PAID",
			deliveries: []delivery{{3 * time.Minute, pay("pay-1")}, {3 * time.Minute, pay("pay-2")}},
			paidBy:     "pay-1", late: []string{"pay-2"}, refunds: []string{"pay-2"}, applied: 2,
		},
		{
			name:       "a double payment, the second replayed",
			deliveries: []delivery{{3 * time.Minute, pay("pay-1")}, {3 * time.Minute, pay("pay-2")}, {3 * time.Minute, pay("pay-2")}},
			paidBy:     "pay-1", late: []string{"pay-2"}, refunds: []string{"pay-2"}, applied: 3,
		},
		{
			name: "a wrong amount is refused, then the right payment",
			deliveries: []delivery{{2 * time.Minute, func(req seckill.OrderRequest) seckill.Payment {
				p := payment(req, "pay-bad")
				p.AmountCents = 1
				return p
			}}, {3 * time.Minute, pay("pay-good")}},
			paidBy: "pay-good", applied: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 6)
			req := h.admit("7-dup", 1006, 2)
			// Deliveries that share an instant are signalled in one callback,
			// so that they all reach the workflow in one task.
			byTime := map[time.Duration][]seckill.Payment{}
			var instants []time.Duration
			for _, d := range tc.deliveries {
				if _, ok := byTime[d.at]; !ok {
					instants = append(instants, d.at)
				}
				byTime[d.at] = append(byTime[d.at], d.p(req))
			}
			for _, at := range instants {
				ps := byTime[at]
				h.env.RegisterDelayedCallback(func() {
					for _, p := range ps {
						h.env.SignalWorkflow(workflows.PaymentSignal, p)
					}
				}, at)
			}

			st := h.run(req)

			assert.Equal(t, seckill.StatusPaid, st.Status)
			assert.Equal(t, tc.paidBy, st.PaymentID)
			assert.Equal(t, tc.late, st.LatePayments)
			assert.Equal(t, seckill.StatusPaid, h.store.status(req.OrderNo), "an extra payment never changes a PAID order")
			captured, refunds := h.store.paymentsOf(req.OrderNo)
			assert.Equal(t, []string{tc.paidBy}, captured)
			assert.Equal(t, tc.refunds, refunds)
			assert.Equal(t, tc.applied, h.inj.count(mApply))
			assert.Zero(t, h.inj.count(mClose))
			assert.Equal(t, []string{"PAID"}, h.statuses())
			h.assertInvariants()
		})
	}
}

// (6) Every activity is idempotent on the order number: a retry after a
// transient error, or after a commit whose response was lost (a timeout),
// never creates twice, decrements twice, restores twice or captures twice.
func TestOrderActivityRetriesAreIdempotent(t *testing.T) {
	cases := []struct {
		name   string
		method string
		faults []fault
		paid   bool // drive the paid path instead of the timeout path
	}{
		{"CreateOrder: database down twice", mCreate, times(2, transient()), false},
		{"CreateOrder: committed, response lost", mCreate, []fault{lostResponse()}, false},
		{"CreateOrder: committed twice, responses lost", mCreate, times(2, lostResponse()), false},
		{"CreateOrder: committed, cache publish failed", mPut, []fault{transient()}, false},
		{"CloseOrder: database down", mClose, times(3, transient()), false},
		{"CloseOrder: committed, response lost", mClose, []fault{lostResponse()}, false},
		{"CloseOrder: committed twice, responses lost", mClose, times(2, lostResponse()), false},
		{"Release: Redis down", mRelease, times(2, transient()), false},
		{"Release: released, response lost", mRelease, []fault{lostResponse()}, false},
		{"ApplyPayment: database down", mApply, times(2, transient()), true},
		{"ApplyPayment: committed, response lost", mApply, []fault{lostResponse()}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 10)
			req := h.admit("7-retry", 1007, 2)
			h.inj.failNext(tc.method, tc.faults...)
			if tc.paid {
				h.signalAt(4*time.Minute, workflows.PaymentSignal, payment(req, "pay-retry"))
			}

			st := h.run(req)

			calls := 1 + len(tc.faults)
			if tc.method == mPut {
				calls = 2 + len(tc.faults) // CreateOrder's and CloseOrder's publish, plus the retry
			}
			assert.Equal(t, calls, h.inj.count(tc.method), "every fault must have been retried")
			dec, res := h.store.counts(req.OrderNo)
			assert.Equal(t, 2, dec, "stock taken once")
			if tc.paid {
				assert.Equal(t, seckill.StatusPaid, st.Status)
				assert.Zero(t, res)
				captured, refunds := h.store.paymentsOf(req.OrderNo)
				assert.Equal(t, []string{"pay-retry"}, captured)
				assert.Empty(t, refunds, "a retried payment is not a second payment")
				assert.Equal(t, []string{"PAID"}, h.statuses())
			} else {
				h.assertCompensated(req, st, workflows.ReasonTimeout)
				assert.Equal(t, 2, res, "stock given back once")
				assert.Equal(t, []string{"CLOSED"}, h.statuses())
			}
			h.assertInvariants()
		})
	}
}

// (6b) The same rule with the failures injected by the test environment's
// activity mocks, by registered NAME: every step's first attempt does its
// work and then times out (start-to-close); the retries must find the work
// done and do nothing more.
func TestOrderActivityTimeoutsViaNamedMocks(t *testing.T) {
	h := newHarness(t, 10)
	req := h.admit("7-mock", 1008, 1)
	timeout := temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
	attempts := map[string][]int32{}
	var mu sync.Mutex
	record := func(ctx context.Context, name string) bool {
		a := activity.GetInfo(ctx).Attempt
		mu.Lock()
		attempts[name] = append(attempts[name], a)
		mu.Unlock()
		return a == 1
	}
	h.env.OnActivity(activities.CreateOrderName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.CreateOrderInput) (activities.CreateOrderResult, error) {
			r, err := h.acts.CreateOrder(ctx, in)
			if record(ctx, activities.CreateOrderName) {
				return activities.CreateOrderResult{}, timeout
			}
			return r, err
		})
	h.env.OnActivity(activities.CloseAndReleaseName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.CloseOrderInput) (activities.CloseAndReleaseResult, error) {
			r, err := h.acts.CloseAndRelease(ctx, in)
			if record(ctx, activities.CloseAndReleaseName) {
				return activities.CloseAndReleaseResult{}, timeout
			}
			return r, err
		})

	st := h.run(req)

	h.assertCompensated(req, st, workflows.ReasonTimeout)
	for _, name := range []string{activities.CreateOrderName, activities.CloseAndReleaseName} {
		assert.Equal(t, []int32{1, 2}, attempts[name], name)
	}
	dec, res := h.store.counts(req.OrderNo)
	assert.Equal(t, 1, dec)
	assert.Equal(t, 1, res)
	h.env.AssertExpectations(t)
	h.assertInvariants()
}

// (6c) MySQL stays down until CreateOrder runs out of retries (its one-hour
// budget: CreateOrder is a local activity, whose retries the test
// environment runs with the real policy on its skipped clock, a few hundred
// attempts at most 10 s apart): the workflow gives up creating, writes a
// CLOSED tombstone (no stock moves) and releases the Redis reservation. A
// straggling create attempt afterwards finds the tombstone and can never
// take stock.
func TestOrderCreateOutageExhaustsRetries(t *testing.T) {
	h := newHarness(t, 10)
	req := h.admit("7-down", 1009, 2)
	h.inj.failAlways(mCreate, transient())

	st := h.run(req)

	assert.Greater(t, h.inj.count(mCreate), 300, "CreateOrder must have been retried for its whole hour")
	h.assertCompensated(req, st, workflows.ReasonCreateFailed)
	dec, res := h.store.counts(req.OrderNo)
	assert.Zero(t, dec)
	assert.Zero(t, res)

	h.inj.heal(mCreate)
	late, err := h.store.CreateOrder(context.Background(), &req, st.PayDeadline)
	require.NoError(t, err)
	assert.Equal(t, seckill.StatusClosed, late.Status, "the tombstone guards the order number")
	assert.Equal(t, h.store.total, h.store.stockLeft())
	// Listed QUEUED (stuck before creation) once creating took long.
	assert.Equal(t, []string{"QUEUED", "CLOSED"}, h.statuses())
	h.assertInvariants()
}

// An order is listed WAIT_PAY from its start (no upsert): a create that
// takes longer than a few seconds (MySQL slow or down) lists it QUEUED, the
// ops view of orders stuck before creation, until the row exists.
func TestSlowCreateIsListedQueued(t *testing.T) {
	h := newHarness(t, 10)
	req := h.admit("7-slow", 1024, 1)
	// Seven failures: the retries' backoffs alone (0.2 s doubling) exceed
	// the ten quick seconds.
	h.inj.failNext(mCreate, times(7, transient())...)

	st := h.run(req)

	assert.Equal(t, 8, h.inj.count(mCreate))
	h.assertCompensated(req, st, workflows.ReasonTimeout)
	assert.Equal(t, []string{"QUEUED", "WAIT_PAY", "CLOSED"}, h.statuses())
	h.assertInvariants()
}

// Runs started before the fewer-actions version replay their old way: the
// WAIT_PAY upsert after CreateOrder, then CloseOrder and ReleaseReservation
// as two activities.
func TestFewerActionsIsVersioned(t *testing.T) {
	h := newHarness(t, 10)
	h.env.OnGetVersion("fewer-actions", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	var mu sync.Mutex
	var acts []string
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		acts = append(acts, info.ActivityType.Name)
	})
	req := h.admit("7-v0", 1025, 1)

	st := h.run(req)

	h.assertCompensated(req, st, workflows.ReasonTimeout)
	assert.Equal(t, []string{"WAIT_PAY", "CLOSED"}, h.statuses())
	assert.Equal(t, []string{activities.CloseOrderName, activities.ReleaseReservationName}, acts)
	h.assertInvariants()
}

// (6d) Compensation retries through an outage: CloseOrder fails on 9
// attempts in a row (the most the test environment's 10-attempt cap allows)
// and still closes and gives the stock back exactly once.
func TestOrderCompensationRetriesThroughOutage(t *testing.T) {
	h := newHarness(t, 10)
	req := h.admit("7-long", 1010, 1)
	h.inj.failNext(mClose, times(9, transient())...)

	st := h.run(req)

	assert.Equal(t, 10, h.inj.count(mClose))
	h.assertCompensated(req, st, workflows.ReasonTimeout)
	_, res := h.store.counts(req.OrderNo)
	assert.Equal(t, 1, res)
	h.assertInvariants()
}

// (6e) A compensation that cannot succeed within its retry budget (24h in
// production, 10 attempts in the test environment) fails the workflow
// loudly; it never releases Redis for an order MySQL still holds.
func TestOrderCompensationGivesUpLoudly(t *testing.T) {
	h := newHarness(t, 10)
	req := h.admit("7-dead", 1011, 1)
	h.inj.failAlways(mClose, transient())

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	assert.Equal(t, seckill.StatusWaitPay, h.store.status(req.OrderNo), "the row still holds its stock")
	assert.Zero(t, h.inj.count(mRelease), "Redis must not be released while MySQL holds the stock")
	assert.True(t, h.gate.live(req.OrderNo))
	h.assertInvariants()
}

// (7) Cancelling the workflow (ops, or a terminate-by-cancel) never leaks
// stock: compensation runs on a disconnected context wherever the
// cancellation lands, and a decision already made (a payment) stands.
func TestOrderWorkflowCancellation(t *testing.T) {
	cases := []struct {
		name      string
		setup     func(h *harness, req seckill.OrderRequest)
		status    seckill.Status
		reason    string
		taken     int // DB stock ever taken (and, if closed, given back)
		lateWrite bool
	}{
		{
			name: "while waiting for the payment",
			setup: func(h *harness, _ seckill.OrderRequest) {
				h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
			},
			status: seckill.StatusClosed, reason: workflows.ReasonWorkflowStopped, taken: 2,
		},
		{
			name: "while CreateOrder runs, its row committed first",
			setup: func(h *harness, _ seckill.OrderRequest) {
				h.inj.on(mCreate, hooks{after: func(int) {
					h.env.CancelWorkflow()
					// The workflow abandons this attempt and compensates.
					h.waitFor("CloseOrder", func() bool { return h.inj.finished(mClose) > 0 })
				}})
			},
			status: seckill.StatusClosed, reason: workflows.ReasonWorkflowStopped, taken: 2, lateWrite: true,
		},
		{
			name: "while CreateOrder runs, the tombstone first",
			setup: func(h *harness, _ seckill.OrderRequest) {
				h.inj.on(mCreate, hooks{before: func(int) {
					h.env.CancelWorkflow()
					// The straggling insert reaches the database only after the
					// compensation wrote the tombstone.
					h.waitFor("CloseOrder", func() bool { return h.inj.finished(mClose) > 0 })
				}})
			},
			status: seckill.StatusClosed, reason: workflows.ReasonWorkflowStopped, taken: 0, lateWrite: true,
		},
		{
			name: "during the compensation of a timeout",
			setup: func(h *harness, _ seckill.OrderRequest) {
				h.inj.on(mClose, hooks{before: func(int) { h.env.CancelWorkflow() }})
			},
			status: seckill.StatusClosed, reason: workflows.ReasonTimeout, taken: 2,
		},
		{
			name: "while the payment is being applied",
			setup: func(h *harness, req seckill.OrderRequest) {
				h.signalAt(3*time.Minute, workflows.PaymentSignal, payment(req, "pay-c"))
				h.inj.on(mApply, hooks{before: func(int) { h.env.CancelWorkflow() }})
			},
			status: seckill.StatusPaid, taken: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 8)
			req := h.admit("7-wfcancel", 1012, 2)
			tc.setup(h, req)

			st := h.run(req)
			if tc.lateWrite {
				// The abandoned CreateOrder attempt and its cache publish
				// finish on their own goroutine.
				require.Eventually(t, func() bool {
					return h.inj.finished(mCreate) == 1 && h.inj.finished(mPut) == 2
				}, 10*time.Second, time.Millisecond)
			}

			assert.Equal(t, tc.status, st.Status)
			assert.Equal(t, tc.status, h.store.status(req.OrderNo))
			dec, _ := h.store.counts(req.OrderNo)
			assert.Equal(t, tc.taken, dec)
			if tc.status == seckill.StatusClosed {
				h.assertCompensated(req, st, tc.reason)
			} else {
				assert.Zero(t, h.inj.count(mClose))
				assert.Zero(t, h.inj.count(mRelease))
				assert.Equal(t, "pay-c", st.PaymentID)
			}
			h.assertInvariants()
		})
	}
}

// (8) MySQL refuses an order Redis admitted (drift: Redis lost an order the
// database still holds): the order ends FAILED with no compensation and no
// Redis release (the drift is left for reconcile), and a payment that came
// meanwhile is queued for its refund.
func TestOrderCreateRefusedEndsFailed(t *testing.T) {
	h := newHarness(t, 3)
	h.store.seed(seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: "7-other", SessionID: testSession,
		UserID: 2000, Quantity: 3}, PriceCents: testPrice})
	req := h.admit("7-drift", 1013, 1)
	p := payment(req, "pay-f")
	h.inj.on(mCreate, hooks{before: func(int) { h.env.SignalWorkflow(workflows.PaymentSignal, p) }})

	st := h.run(req)

	assert.Equal(t, seckill.StatusFailed, st.Status)
	assert.Empty(t, st.CloseReason)
	assert.Empty(t, st.PaymentID)
	assert.Equal(t, []string{"pay-f"}, st.LatePayments)
	assert.Equal(t, seckill.StatusFailed, h.store.status(req.OrderNo))
	captured, refunds := h.store.paymentsOf(req.OrderNo)
	assert.Empty(t, captured)
	assert.Equal(t, []string{"pay-f"}, refunds)
	assert.Zero(t, h.inj.count(mClose), "a FAILED order has nothing to close")
	assert.Zero(t, h.inj.count(mRelease), "Redis stock is not restored for a FAILED order")
	assert.True(t, h.gate.live(req.OrderNo))
	assert.Zero(t, h.store.stockLeft())
	assert.Equal(t, []string{"FAILED"}, h.statuses())
	h.assertInvariants()
}

// (9) CreateOrder ends in an error — a non-retryable refusal, or the
// activity was cancelled — before any row exists: the workflow writes a
// CLOSED tombstone (no stock moves) and releases the Redis reservation; a
// straggling create can never take stock afterwards.
func TestOrderCreateErrorCompensatesWithTombstone(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(h *harness)
		reason string
		calls  int // CreateOrder attempts that reached the store
	}{
		{
			name: "non-retryable refusal",
			setup: func(h *harness) {
				h.inj.failNext(mCreate, fault{err: seckill.Errorf(seckill.EINVALID, "injected: bad order")})
			},
			reason: workflows.ReasonCreateFailed, calls: 1,
		},
		{
			name: "activity cancelled",
			setup: func(h *harness) {
				h.env.OnActivity(activities.CreateOrderName, mock.Anything, mock.Anything).
					Return(activities.CreateOrderResult{}, temporal.NewCanceledError("injected"))
			},
			reason: workflows.ReasonWorkflowStopped, calls: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 4)
			req := h.admit("7-tomb", 1014, 2)
			tc.setup(h)

			st := h.run(req)

			assert.Equal(t, tc.calls, h.inj.count(mCreate), "a refusal is not retried")
			h.assertCompensated(req, st, tc.reason)
			late, err := h.store.CreateOrder(context.Background(), &req, st.PayDeadline)
			require.NoError(t, err)
			assert.Equal(t, seckill.StatusClosed, late.Status, "tombstone")
			dec, res := h.store.counts(req.OrderNo)
			assert.Zero(t, dec)
			assert.Zero(t, res)
			assert.Equal(t, []string{"CLOSED"}, h.statuses())
			h.assertInvariants()
		})
	}
}

// (10) The state query answers the current status at any time: WAIT_PAY
// with the deadline while waiting, then the decision with its reason and
// late payments; the OrderStatus search attribute follows every change.
func TestOrderStateQuery(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-query", 1015, 1)
	early := h.queryAt(time.Second)
	mid := h.queryAt(10 * time.Minute)
	h.inj.on(mClose, hooks{before: func(int) { h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, "pay-late")) }})

	st := h.run(req)

	deadline := startTime.Add(payTimeout)
	for _, q := range []*workflows.OrderState{early, mid} {
		assert.Equal(t, req.OrderNo, q.OrderNo)
		assert.Equal(t, seckill.StatusWaitPay, q.Status)
		assert.True(t, q.PayDeadline.Equal(deadline), "deadline %v", q.PayDeadline)
		assert.Empty(t, q.PaymentID)
		assert.Empty(t, q.CloseReason)
	}
	final := h.query()
	assert.Equal(t, st, final)
	assert.Equal(t, seckill.StatusRefundPending, final.Status)
	assert.Equal(t, workflows.ReasonTimeout, final.CloseReason)
	assert.Equal(t, []string{"pay-late"}, final.LatePayments)
	assert.Equal(t, []string{"CLOSED", "REFUND_PENDING"}, h.statuses())
	h.assertInvariants()
}

// ---------------------------------------------------------------------------
// Payments are never lost: a retried capture or late payment keeps its id,
// and a payment that cannot be recorded fails the workflow loudly.

// A payment whose first ApplyPayment attempt committed but timed out is
// retried; the retry answers DUPLICATE, and the state still names the
// payment that paid the order.
func TestRetriedCaptureKeepsPaymentID(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-bug1", 1016, 1)
	h.inj.failNext(mApply, lostResponse())
	h.signalAt(time.Minute, workflows.PaymentSignal, payment(req, "pay-x"))

	st := h.run(req)

	assert.Equal(t, seckill.StatusPaid, st.Status)
	assert.Equal(t, "pay-x", st.PaymentID)
	h.assertInvariants()
}

// The same for a late payment: its refund is recorded in MySQL, and the
// retry's DUPLICATE outcome still lists it among the late payments.
func TestRetriedLatePaymentIsListed(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-bug2", 1017, 1)
	h.inj.failNext(mApply, lostResponse())
	h.inj.on(mClose, hooks{before: func(int) { h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, "pay-y")) }})

	st := h.run(req)

	assert.Equal(t, seckill.StatusRefundPending, st.Status)
	assert.Equal(t, []string{"pay-y"}, st.LatePayments)
	h.assertInvariants()
}

// A payment signal whose ApplyPayment keeps failing past its retry budget
// (a day in production, 10 attempts in the test environment) is never
// dropped: the webhook already answered 200, so the workflow fails loudly
// with the payment in its history, and the order is NOT closed over it
// (its stock stays held until ops resolve it).
func TestUnrecordablePaymentFailsLoudly(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-bug3", 1018, 1)
	h.inj.failNext(mApply, times(10, transient())...) // every attempt the policy allows
	h.signalAt(time.Minute, workflows.PaymentSignal, payment(req, "pay-z"))

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	assert.Equal(t, seckill.StatusWaitPay, h.store.status(req.OrderNo), "not closed over an accepted payment")
	assert.Zero(t, h.inj.count(mClose))
	assert.Zero(t, h.inj.count(mRelease))
	h.assertInvariants()
}

// ---------------------------------------------------------------------------
// Buffered payments are recorded on every way out, failures included.

// Compensation gives up (CloseOrder fails past its retry budget) while a
// payment is buffered: the payment is still applied before the workflow
// fails. The close never committed, so the order still holds its stock and
// takes the payment (PAID), exactly as the compare-and-set would have
// settled the race.
func TestBufferedPaymentRecordedWhenCompensationGivesUp(t *testing.T) {
	h := newHarness(t, 10)
	req := h.admit("7-compfail", 1019, 1)
	h.inj.failAlways(mClose, transient())
	h.inj.on(mClose, hooks{before: func(call int) {
		if call == 1 {
			h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, "pay-cf"))
		}
	}})

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError(), "the compensation failure stays loud")
	captured, refunds := h.store.paymentsOf(req.OrderNo)
	assert.Equal(t, []string{"pay-cf"}, captured)
	assert.Empty(t, refunds)
	assert.Equal(t, seckill.StatusPaid, h.store.status(req.OrderNo))
	assert.Zero(t, h.inj.count(mRelease))
	h.assertInvariants()
}

// The close committed but the Redis release gives up: a payment buffered
// meanwhile is recorded as a late payment (REFUND_PENDING) before the
// workflow fails.
func TestBufferedPaymentRecordedWhenReleaseGivesUp(t *testing.T) {
	h := newHarness(t, 10)
	req := h.admit("7-relfail", 1020, 1)
	h.inj.failAlways(mRelease, transient())
	h.inj.on(mRelease, hooks{before: func(call int) {
		if call == 1 {
			h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, "pay-rf"))
		}
	}})

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	captured, refunds := h.store.paymentsOf(req.OrderNo)
	assert.Empty(t, captured)
	assert.Equal(t, []string{"pay-rf"}, refunds)
	assert.Equal(t, seckill.StatusRefundPending, h.store.status(req.OrderNo))
	assert.True(t, h.gate.live(req.OrderNo), "the release never happened: left to the sweep")
}

// A payment that cannot be recorded fails the workflow, but a second
// payment buffered behind it is still recorded first (here it pays the
// order; the first one waits in MySQL as RECEIVED for the refund relay).
func TestUnrecordablePaymentStillDrainsTheOthers(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-drain", 1021, 1)
	h.inj.failNext(mApply, times(10, transient())...) // every attempt of the first payment
	h.inj.on(mApply, hooks{before: func(call int) {
		if call == 1 {
			h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, "pay-2"))
		}
	}})
	h.signalAt(time.Minute, workflows.PaymentSignal, payment(req, "pay-1"))

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	assert.Equal(t, 11, h.inj.count(mApply), "10 attempts of pay-1, then pay-2")
	captured, _ := h.store.paymentsOf(req.OrderNo)
	assert.Equal(t, []string{"pay-2"}, captured)
	assert.Equal(t, seckill.StatusPaid, h.store.status(req.OrderNo))
	h.assertInvariants()
}

// Creation gives up and so does the compensation (no tombstone could be
// written): a payment buffered during creation is still tried before the
// workflow fails (without a row it is refused here and stays RECEIVED in
// MySQL for the refund relay).
func TestBufferedPaymentTriedWhenCreateAndCompensationFail(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-allfail", 1022, 1)
	h.inj.failAlways(mCreate, transient())
	h.inj.failAlways(mClose, transient())
	h.inj.on(mCreate, hooks{before: func(call int) {
		if call == 1 {
			h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, "pay-cr"))
		}
	}})

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	assert.Equal(t, 1, h.inj.count(mApply), "the buffered payment was tried")
	assert.Zero(t, h.inj.count(mRelease))
}

// Runs recorded before the drain on failure replay their old way: at the
// default version a failing compensation returns at once.
func TestDrainOnFailureIsVersioned(t *testing.T) {
	h := newHarness(t, 10)
	h.env.OnGetVersion("drain-payments-on-failure", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	req := h.admit("7-oldrun", 1023, 1)
	h.inj.failAlways(mClose, transient())
	h.inj.on(mClose, hooks{before: func(call int) {
		if call == 1 {
			h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, "pay-old"))
		}
	}})

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	assert.Zero(t, h.inj.count(mApply))
}

// (11) A payment already buffered when the row comes into being — the
// webhook's signal-with-start delivers it with the start of a QUEUED order,
// or it came while CreateOrder was retrying — is applied right after the
// row exists, before the pay timer is even set: the timer can never win
// against it, not even when creating took longer than the whole pay
// timeout. On a row that cannot take it (FAILED, closed before) it is
// recorded for refund, and a closed order still gives its Redis stock back.
func TestPaymentBufferedAtCreationIsAppliedFirst(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(h *harness, req *seckill.OrderRequest)
		payments []string
		status   seckill.Status // the row at the end
		paidBy   string
		late     []string
		listed   []string
		timers   int
	}{
		{
			name:     "with the start",
			payments: []string{"pay-1"}, status: seckill.StatusPaid, paidBy: "pay-1", listed: []string{"PAID"},
		},
		{
			name:     "a duplicate delivery and a second payment with it",
			payments: []string{"pay-1", "pay-1", "pay-2"}, status: seckill.StatusPaid, paidBy: "pay-1",
			late: []string{"pay-2"}, listed: []string{"PAID"},
		},
		{
			name: "creating outlasted the pay timeout",
			setup: func(h *harness, req *seckill.OrderRequest) {
				req.PayTimeout = 5 * time.Second
				h.inj.failNext(mCreate, times(7, transient())...)
			},
			payments: []string{"pay-1"}, status: seckill.StatusPaid, paidBy: "pay-1",
			listed: []string{"QUEUED", "WAIT_PAY", "PAID"},
		},
		{
			name: "closed before (a reset replays the creation)",
			setup: func(h *harness, req *seckill.OrderRequest) {
				h.store.mu.Lock()
				h.store.orders[req.OrderNo] = req.Order(seckill.StatusClosed, time.Time{})
				h.store.mu.Unlock()
			},
			payments: []string{"pay-1"}, status: seckill.StatusRefundPending, late: []string{"pay-1"},
			listed: []string{"CLOSED", "REFUND_PENDING"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 10)
			req := h.admit("7-early", 1030, 1)
			if tc.setup != nil {
				tc.setup(h, &req)
			}
			var created atomic.Bool
			h.inj.on(mCreate, hooks{before: func(call int) {
				if call == 1 {
					for _, id := range tc.payments {
						h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, id))
					}
				}
			}, after: func(int) { created.Store(true) }})
			// Timers before the row exists are CreateOrder's retry backoffs.
			var timers []time.Duration
			h.env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
				if created.Load() {
					timers = append(timers, d)
				}
			})

			st := h.run(req)

			assert.Empty(t, timers, "no pay timer for an order whose payment was there")
			assert.Equal(t, tc.status, h.store.status(req.OrderNo))
			assert.Equal(t, tc.paidBy, st.PaymentID)
			assert.Equal(t, tc.late, st.LatePayments)
			captured, refunds := h.store.paymentsOf(req.OrderNo)
			if tc.paidBy != "" {
				assert.Equal(t, []string{tc.paidBy}, captured)
			} else {
				assert.Empty(t, captured)
			}
			assert.Equal(t, tc.late, refunds)
			assert.Equal(t, tc.listed, h.statuses())
			h.assertInvariants()
		})
	}
}

// Runs recorded before payBufferedVersion replay their old way: the pay
// timer is set first, and the payment comes from the selector after it.
func TestPayBufferedFirstIsVersioned(t *testing.T) {
	h := newHarness(t, 10)
	h.env.OnGetVersion("pay-buffered-first", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	req := h.admit("7-oldpay", 1031, 1)
	h.inj.on(mCreate, hooks{before: func(int) { h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, "pay-old")) }})
	var timers []time.Duration
	h.env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })

	st := h.run(req)

	assert.Equal(t, seckill.StatusPaid, st.Status)
	assert.Equal(t, []time.Duration{payTimeout}, timers)
	h.assertInvariants()
}
