package workflows_test

// The order's decisions: paid before the deadline, closed by the pay timer
// or a cancel signal with its stock given back once, the races between
// them, duplicate payments, and the state query that reports them.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/storetest"
	"github.com/seckill/seckill/workflows"
)

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
			h.inj.On(storetest.CreateOrder, storetest.Hooks{Before: func(int) { h.env.SignalWorkflow(workflows.PaymentSignal, p) }})
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

			assert.Equal(t, seckill.StatusPaid, h.store.Status(req.OrderNo))
			captured, refunds := h.store.Payments(req.OrderNo)
			assert.Equal(t, []string{"pay-1"}, captured)
			assert.Empty(t, refunds)
			assert.Zero(t, h.inj.Count(storetest.CloseOrder), "no compensation for a paid order")
			assert.Zero(t, h.inj.Count(storetest.Release), "no release for a paid order")
			assert.True(t, h.gate.Live(req.OrderNo))
			assert.Equal(t, 8, h.store.StockLeft())
			assert.Equal(t, 8, h.gate.StockLeft())
			h.assertFinal("PAID")
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
			req := *seckill.NewOrderRequest(h.admit("7-timeout", 1002, 3).Reservation, &h.session, tc.timeout)
			justBefore := h.queryAt(tc.deadline - time.Millisecond)

			st := h.run(req)

			assert.Equal(t, seckill.StatusWaitPay, justBefore.Status, "must still wait 1ms before the deadline")
			assert.True(t, st.PayDeadline.Equal(startTime.Add(tc.deadline)), "deadline %v", st.PayDeadline)
			assert.False(t, h.env.Now().Before(startTime.Add(tc.deadline)), "closed before the deadline")
			h.assertCompensated(req, st, workflows.ReasonTimeout)
			assert.Contains(t, h.details(), "**CLOSED** · order `7-timeout`")
			assert.Contains(t, h.details(), "closed: pay_timeout, stock given back")
			dec, res := h.store.Counts(req.OrderNo)
			assert.Equal(t, 3, dec)
			assert.Equal(t, 3, res)
			assert.Equal(t, 1, h.inj.Count(storetest.CloseOrder))
			assert.Equal(t, 1, h.inj.Count(storetest.Release))
			h.assertFinal("CLOSED")
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
			h.inj.On(storetest.CreateOrder, storetest.Hooks{Before: func(int) {
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
			assert.Equal(t, 1, h.inj.Count(storetest.CloseOrder))
			assert.Equal(t, 1, h.inj.Count(storetest.Release))
			h.assertFinal("CLOSED")
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
				h.inj.On(storetest.CloseOrder, storetest.Hooks{Before: func(int) { deliver() }})
			} else {
				h.env.RegisterDelayedCallback(deliver, tc.at)
			}

			st := h.run(req)

			captured, refunds := h.store.Payments(req.OrderNo)
			inWorkflow := len(captured)+len(refunds) > 0
			if !inWorkflow {
				// The workflow ended before the signal reached it: the signal
				// gets NotFound and the webhook records the payment in MySQL
				// itself, then refreshes the cached view (api/webhook.go).
				outcome, o, err := h.store.ApplyPayment(context.Background(), &p)
				require.NoError(t, err)
				assert.Equal(t, seckill.PaymentRefundPending, outcome)
				assert.Equal(t, seckill.StatusRefundPending, o.Status)
				require.NoError(t, h.gate.PutOrder(context.Background(), o))
				captured, refunds = h.store.Payments(req.OrderNo)
			}

			dec, res := h.store.Counts(req.OrderNo)
			paid := h.store.Status(req.OrderNo) == seckill.StatusPaid
			closedWithStockBack := res == dec && dec == 2 && h.gate.Releases(req.OrderNo) == 1
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
				assert.Zero(t, h.inj.Count(storetest.CloseOrder))
				assert.Equal(t, []string{"PAID"}, h.statuses())
			} else {
				assert.Equal(t, seckill.StatusRefundPending, h.store.Status(req.OrderNo), "a late payment never reopens")
				assert.Empty(t, captured)
				assert.Equal(t, []string{"pay-race"}, refunds)
				assert.Equal(t, workflows.ReasonTimeout, st.CloseReason)
				assert.Equal(t, h.total, h.store.StockLeft())
				assert.Equal(t, h.total, h.gate.StockLeft())
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

			paid := h.store.Status(req.OrderNo) == seckill.StatusPaid
			_, res := h.store.Counts(req.OrderNo)
			gaveBack := res == 1 && h.gate.Releases(req.OrderNo) == 1
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
// after PAID waits for its refund and the order stays PAID; a payment of
// the wrong amount never pays the order and waits for its refund, and does
// not block a later good one.
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
			name: "a wrong amount is refunded, then the right payment",
			deliveries: []delivery{{2 * time.Minute, func(req seckill.OrderRequest) seckill.Payment {
				p := payment(req, "pay-bad")
				p.AmountCents = 1
				return p
			}}, {3 * time.Minute, pay("pay-good")}},
			paidBy: "pay-good", late: []string{"pay-bad"}, refunds: []string{"pay-bad"}, applied: 2,
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
			assert.Equal(t, seckill.StatusPaid, h.store.Status(req.OrderNo), "an extra payment never changes a PAID order")
			captured, refunds := h.store.Payments(req.OrderNo)
			assert.Equal(t, []string{tc.paidBy}, captured)
			assert.Equal(t, tc.refunds, refunds)
			assert.Equal(t, tc.applied, h.inj.Count(storetest.ApplyPayment))
			assert.Zero(t, h.inj.Count(storetest.CloseOrder))
			h.assertFinal("PAID")
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
	h.inj.On(storetest.CloseOrder, storetest.Hooks{Before: func(int) { h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, "pay-late")) }})

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
	h.assertFinal("CLOSED", "REFUND_PENDING")
}

// An order started without its search attributes (by hand, not through
// Orders.Start) is listed by the workflow itself: WAIT_PAY once its row
// exists, then PAID.
func TestOrderStartedWithoutSearchAttributesIsListed(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-unlisted", 1041, 1)
	h.signalAt(time.Minute, workflows.PaymentSignal, payment(req, "pay-u"))

	h.env.ExecuteWorkflow(workflows.OrderWorkflowName, req)

	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	assert.Equal(t, seckill.StatusPaid, h.store.Status(req.OrderNo))
	h.assertFinal("WAIT_PAY", "PAID")
}

// The pay deadline counts from the reservation (the shopper's 202, from
// which a QUEUED order is payable), not from the workflow's start: a
// backlog of starts never moves it. A reservation whose deadline passed
// before its workflow started is created and closed at once, its stock
// given back exactly once; a request built without PayBy (by hand)
// counts from the workflow's start. The timer is set by the worker's clock
// where the workflow's is behind it: an eagerly started workflow's clock
// is when its start reached the server, and under load its first task
// comes back later. A worker's clock behind the workflow's never delays
// the close, and one ahead by more than the first task could take (the
// test environment's task timeout is a second) never hastens it.
func TestOrderDeadlineCountsFromTheReservation(t *testing.T) {
	cases := []struct {
		name       string
		reservedAt time.Duration // before the workflow's start
		noPayBy    bool          // a request built by hand, without PayBy
		ahead      time.Duration // the worker's clock ahead of the workflow's
		deadline   time.Duration // after the workflow's start
		early      time.Duration // the close before it, by the workflow's clock
	}{
		{"started at once", 0, false, 0, payTimeout, 0},
		{"started 5 minutes late", 5 * time.Minute, false, 0, payTimeout - 5*time.Minute, 0},
		{"started after its deadline", payTimeout + time.Minute, false, 0, -time.Minute, 0},
		{"a request without PayBy", 5 * time.Minute, true, 0, payTimeout, 0},
		{"its first task answered 800 ms late", 0, false, 800 * time.Millisecond, payTimeout, 800 * time.Millisecond},
		{"a worker's clock 3 s behind", 0, false, -3 * time.Second, payTimeout, 0},
		{"a worker's clock an hour ahead", 0, false, time.Hour, payTimeout, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 4)
			h.acts.Now = func() time.Time { return h.env.Now().Add(tc.ahead) }
			req := h.admitAt(startTime.Add(-tc.reservedAt), "7-late", 1040, 2)
			if tc.noPayBy {
				req.PayBy = time.Time{}
			}

			st := h.run(req)

			assert.True(t, st.PayDeadline.Equal(startTime.Add(tc.deadline)), "deadline %v", st.PayDeadline)
			// The close, by the clock the timer was set by.
			closed := h.env.Now().Add(tc.early)
			assert.False(t, closed.Before(startTime.Add(tc.deadline)), "closed before the deadline")
			assert.False(t, closed.After(startTime.Add(max(0, tc.deadline))), "closed after the deadline: at +%v", closed.Sub(startTime))
			h.assertCompensated(req, st, workflows.ReasonTimeout)
			dec, res := h.store.Counts(req.OrderNo)
			assert.Equal(t, 2, dec)
			assert.Equal(t, 2, res)
			h.assertInvariants()
		})
	}
}
