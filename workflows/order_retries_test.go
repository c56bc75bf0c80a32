package workflows_test

// Retries: every step is idempotent on the order number through faults and
// lost responses, outages are ridden out within each step's retry budget,
// and a budget that runs out fails loudly without leaking stock.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/storetest"
	"github.com/seckill/seckill/workflows"
)

// (6) Every activity is idempotent on the order number: a retry after a
// transient error, or after a commit whose response was lost (a timeout),
// never creates twice, decrements twice, restores twice or captures twice.
func TestOrderActivityRetriesAreIdempotent(t *testing.T) {
	cases := []struct {
		name   string
		call   storetest.Call
		faults []storetest.Fault
		paid   bool // drive the paid path instead of the timeout path
	}{
		{"CreateOrder: database down twice", storetest.CreateOrder, storetest.Times(2, storetest.Transient()), false},
		{"CreateOrder: committed, response lost", storetest.CreateOrder, []storetest.Fault{storetest.LostResponse()}, false},
		{"CreateOrder: committed twice, responses lost", storetest.CreateOrder, storetest.Times(2, storetest.LostResponse()), false},
		{"CreateOrder: committed, cache publish failed", storetest.PutOrder, []storetest.Fault{storetest.Transient()}, false},
		{"CloseOrder: database down", storetest.CloseOrder, storetest.Times(3, storetest.Transient()), false},
		{"CloseOrder: committed, response lost", storetest.CloseOrder, []storetest.Fault{storetest.LostResponse()}, false},
		{"CloseOrder: committed twice, responses lost", storetest.CloseOrder, storetest.Times(2, storetest.LostResponse()), false},
		{"Release: Redis down", storetest.Release, storetest.Times(2, storetest.Transient()), false},
		{"Release: released, response lost", storetest.Release, []storetest.Fault{storetest.LostResponse()}, false},
		{"ApplyPayment: database down", storetest.ApplyPayment, storetest.Times(2, storetest.Transient()), true},
		{"ApplyPayment: committed, response lost", storetest.ApplyPayment, []storetest.Fault{storetest.LostResponse()}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 10)
			req := h.admit("7-retry", 1007, 2)
			h.inj.FailNext(tc.call, tc.faults...)
			if tc.paid {
				h.signalAt(4*time.Minute, workflows.PaymentSignal, payment(req, "pay-retry"))
			}

			st := h.run(req)

			calls := 1 + len(tc.faults)
			if tc.call == storetest.PutOrder {
				calls = 2 + len(tc.faults) // CreateOrder's and CloseOrder's publish, plus the retry
			}
			assert.Equal(t, calls, h.inj.Count(tc.call), "every fault must have been retried")
			dec, res := h.store.Counts(req.OrderNo)
			assert.Equal(t, 2, dec, "stock taken once")
			if tc.paid {
				assert.Equal(t, seckill.StatusPaid, st.Status)
				assert.Zero(t, res)
				captured, refunds := h.store.Payments(req.OrderNo)
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
	dec, res := h.store.Counts(req.OrderNo)
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
	h.inj.FailAlways(storetest.CreateOrder, storetest.Transient())

	st := h.run(req)

	assert.Greater(t, h.inj.Count(storetest.CreateOrder), 300, "CreateOrder must have been retried for its whole hour")
	h.assertCompensated(req, st, workflows.ReasonCreateFailed)
	dec, res := h.store.Counts(req.OrderNo)
	assert.Zero(t, dec)
	assert.Zero(t, res)

	h.inj.Heal(storetest.CreateOrder)
	late, err := h.store.CreateOrder(context.Background(), &req, st.PayDeadline)
	require.NoError(t, err)
	assert.Equal(t, seckill.StatusClosed, late.Status, "the tombstone guards the order number")
	assert.Equal(t, h.total, h.store.StockLeft())
	// Listed QUEUED (stuck before creation) once creating took long.
	h.assertFinal("QUEUED", "CLOSED")
}

// rideOutTransientFailures runs an order (quantity 1) whose step c fails
// transiently on its first n attempts, and checks that the step was tried
// n+1 times and that the order closed at its pay timeout with compensation.
// It returns the harness and the order for the test's own checks.
func rideOutTransientFailures(t *testing.T, orderNo string, userID int64, c storetest.Call, n int) (*harness, seckill.OrderRequest) {
	t.Helper()
	h := newHarness(t, 10)
	req := h.admit(orderNo, userID, 1)
	h.inj.FailNext(c, storetest.Times(n, storetest.Transient())...)

	st := h.run(req)

	assert.Equal(t, n+1, h.inj.Count(c))
	h.assertCompensated(req, st, workflows.ReasonTimeout)
	return h, req
}

// An order is listed WAIT_PAY from its start (no upsert): a create that
// takes longer than a few seconds (MySQL slow or down) lists it QUEUED, the
// ops view of orders stuck before creation, until the row exists.
func TestSlowCreateIsListedQueued(t *testing.T) {
	// Seven failures: the retries' backoffs alone (0.2 s doubling) exceed
	// the ten quick seconds.
	h, _ := rideOutTransientFailures(t, "7-slow", 1024, storetest.CreateOrder, 7)
	h.assertFinal("QUEUED", "WAIT_PAY", "CLOSED")
}

// (6d) Compensation retries through an outage: CloseOrder fails on 9
// attempts in a row (the most the test environment's 10-attempt cap allows)
// and still closes and gives the stock back exactly once.
func TestOrderCompensationRetriesThroughOutage(t *testing.T) {
	h, req := rideOutTransientFailures(t, "7-long", 1010, storetest.CloseOrder, 9)
	_, res := h.store.Counts(req.OrderNo)
	assert.Equal(t, 1, res)
	h.assertInvariants()
}

// (6e) A compensation that cannot succeed within its retry budget (24h in
// production, 10 attempts in the test environment) fails the workflow
// loudly; it never releases Redis for an order MySQL still holds.
func TestOrderCompensationGivesUpLoudly(t *testing.T) {
	h := newHarness(t, 10)
	req := h.admit("7-dead", 1011, 1)
	h.inj.FailAlways(storetest.CloseOrder, storetest.Transient())

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	assert.Equal(t, seckill.StatusWaitPay, h.store.Status(req.OrderNo), "the row still holds its stock")
	assert.Zero(t, h.inj.Count(storetest.Release), "Redis must not be released while MySQL holds the stock")
	assert.True(t, h.gate.Live(req.OrderNo))
	h.assertInvariants()
}
