package workflows_test

// Workflow tests of OrderWorkflow on Temporal's test suite. The suite's
// clock skips timers, so the 15-minute pay timer (and hours of activity
// retries) cost no wall time.
//
// The REAL activities (activities.Activities, registered through
// worker.Register under their explicit names) run against the in-memory
// Store (MySQL) and Gate (Redis) of internal/storetest, which keep the
// contract the real adapters keep (storetest.TestStore, TestGate). The
// fakes also inject faults (an error before the commit, or a commit whose
// response is lost, i.e. an activity timeout) and run hooks inside an
// activity (to cancel the workflow or deliver a signal while a step is in
// flight).
//
// Every test that sells ends with assertInvariants: the stock equations of
// DESIGN.md on both sides, compensation exactly once per closed order and
// never for a paid one, one captured payment per PAID order.
//
// The tests, by topic: order_decisions_test.go (paid, timed out,
// cancelled, the races between them, the state query), order_retries_test.go
// (idempotent retries, outages, compensation's retry budget),
// order_failures_test.go (workflow cancellation, refused or failed
// creation), order_payments_test.go (payments are never lost),
// order_provider_test.go (the close asks the payment provider first) and
// replay_test.go (recorded histories replay).

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/storetest"
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

type harness struct {
	t       *testing.T
	env     *testsuite.TestWorkflowEnvironment
	session seckill.Session
	total   int
	inj     *storetest.Injector
	store   *storetest.MemStore
	gate    *storetest.MemGate
	acts    *activities.Activities

	saMu     sync.Mutex
	saStatus []string // OrderStatus values upserted, in order
}

func newHarness(t *testing.T, total int) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(startTime)
	sess := seckill.Session{ID: testSession, SKUID: testSKU, PriceCents: testPrice, TotalStock: total,
		PerUserLimit: total, StartAt: startTime, EndAt: startTime.Add(time.Hour)}
	inj := storetest.NewInjector()
	h := &harness{t: t, env: env, session: sess, total: total, inj: inj,
		store: storetest.NewMemStore(inj, sess), gate: storetest.NewMemGate(inj, sess)}
	h.acts = &activities.Activities{Store: h.store, Gate: h.gate, Now: env.Now}
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

// admit wins a reservation in Redis when the workflow starts and returns
// the workflow input the API would start OrderWorkflow with.
func (h *harness) admit(orderNo string, userID int64, qty int) seckill.OrderRequest {
	h.t.Helper()
	return h.admitAt(startTime, orderNo, userID, qty)
}

// admitAt wins the reservation at a given time (before the workflow starts:
// a backlog of starts).
func (h *harness) admitAt(at time.Time, orderNo string, userID int64, qty int) seckill.OrderRequest {
	h.t.Helper()
	r, _, err := h.gate.Admit(context.Background(), &h.session, userID, qty, orderNo, "trace-"+orderNo, at)
	require.NoError(h.t, err)
	return *seckill.NewOrderRequest(*r, &h.session, payTimeout)
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

// payDuring delivers the payment signal p from inside the first call of c
// (on the activity's goroutine, while that step is in flight).
func (h *harness) payDuring(c storetest.Call, p seckill.Payment) {
	h.inj.On(c, storetest.Hooks{Before: func(call int) {
		if call == 1 {
			h.env.SignalWorkflow(workflows.PaymentSignal, p)
		}
	}})
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
	h.t.Helper()
	storetest.AssertInvariants(h.t, h.store, h.gate)
}

// assertFinal checks that the order was listed (its search attribute) with
// the statuses listed, in that order, and then the invariants.
func (h *harness) assertFinal(listed ...string) {
	h.t.Helper()
	assert.Equal(h.t, listed, h.statuses())
	h.assertInvariants()
}

// assertCompensated checks that the order closed and gave its stock back
// on both sides exactly once.
func (h *harness) assertCompensated(req seckill.OrderRequest, st workflows.OrderState, reason string) {
	h.t.Helper()
	assert.Equal(h.t, seckill.StatusClosed, st.Status)
	assert.Equal(h.t, reason, st.CloseReason)
	assert.Equal(h.t, seckill.StatusClosed, h.store.Status(req.OrderNo))
	assert.Equal(h.t, reason, h.store.Reason(req.OrderNo))
	assert.Equal(h.t, h.total, h.store.StockLeft(), "all DB stock back")
	assert.Equal(h.t, h.total, h.gate.StockLeft(), "all Redis stock back")
	assert.Equal(h.t, 1, h.gate.Releases(req.OrderNo))
	assert.False(h.t, h.gate.Live(req.OrderNo))
}
