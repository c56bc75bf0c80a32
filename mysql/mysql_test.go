package mysql_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/mysql"
)

func request(sess *seckill.Session, no string, user int64, qty int, slots ...int) *seckill.OrderRequest {
	return &seckill.OrderRequest{
		Reservation: seckill.Reservation{OrderNo: no, SessionID: sess.ID, UserID: user, Quantity: qty,
			Slots: slots, ReservedAt: time.Now().UTC(), TraceID: "trace-" + no, SKUID: sess.SKUID},
		PriceCents: sess.PriceCents, PayTimeout: time.Minute,
	}
}

// store gives a test a fresh database; Redis is preheated but never used
// here, so invariant checks read Redis as "reserved = what MySQL holds".
func store(t *testing.T, stock, limit int) (*testenv.Env, *seckill.Session) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	return e, e.Session(stock, limit, 100)
}

func dbStock(t *testing.T, e *testenv.Env, id int64) int {
	_, n, err := e.DB.Session(context.Background(), id)
	require.NoError(t, err)
	return n
}

// createConcurrently runs CreateOrder at once for the n requests req(0) …
// req(n-1), each with its pay deadline payIn from the call; every call must
// succeed. It returns how many of the orders came back in each status.
func createConcurrently(t *testing.T, e *testenv.Env, n int, payIn time.Duration,
	req func(i int) *seckill.OrderRequest) map[seckill.Status]int {
	ctx := context.Background()
	var wg sync.WaitGroup
	statuses := make([]seckill.Status, n)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := e.DB.CreateOrder(ctx, req(i), time.Now().Add(payIn))
			require.NoError(t, err)
			statuses[i] = o.Status
		}()
	}
	wg.Wait()
	counts := map[seckill.Status]int{}
	for _, s := range statuses {
		counts[s]++
	}
	return counts
}

// A retried CreateOrder (the activity timed out after committing) returns
// the same order and never decrements twice.
func TestCreateOrderIsIdempotent(t *testing.T) {
	e, sess := store(t, 5, 2)
	ctx := context.Background()
	req := request(sess, "1-a", 7, 2, 1, 2)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
			require.NoError(t, err)
			require.Equal(t, seckill.StatusWaitPay, o.Status)
		}()
	}
	wg.Wait()
	require.Equal(t, 3, dbStock(t, e, sess.ID))
	snap, err := e.DB.SessionSnapshot(ctx, sess.ID, nil, time.Now())
	require.NoError(t, err)
	require.Equal(t, 1, snap.Orders[seckill.StatusWaitPay])
	require.Zero(t, snap.LedgerMismatch)
}

// The conditional decrement refuses what the database does not have, even
// if Redis (wrongly) admitted it: the order is FAILED and nothing moves.
func TestConditionalDecrementNeverOversells(t *testing.T) {
	e, sess := store(t, 3, 3)
	counts := createConcurrently(t, e, 10, 0, func(i int) *seckill.OrderRequest {
		return request(sess, fmt.Sprintf("1-%d", i), int64(100+i), 1, 1)
	})
	require.Equal(t, map[seckill.Status]int{seckill.StatusWaitPay: 3, seckill.StatusFailed: 7}, counts)
	require.Equal(t, 0, dbStock(t, e, sess.ID))
}

// The database enforces the per-user limit by itself: a slot handed out
// twice (Redis lost its data) cannot become a second order.
func TestSlotKeyEnforcesPerUserLimit(t *testing.T) {
	e, sess := store(t, 10, 2)
	ctx := context.Background()
	o, err := e.DB.CreateOrder(ctx, request(sess, "1-a", 7, 2, 1, 2), time.Now())
	require.NoError(t, err)
	require.Equal(t, seckill.StatusWaitPay, o.Status)
	o, err = e.DB.CreateOrder(ctx, request(sess, "1-b", 7, 1, 1), time.Now())
	require.NoError(t, err)
	require.Equal(t, seckill.StatusFailed, o.Status)
	require.Equal(t, 8, dbStock(t, e, sess.ID))

	// Closing frees the slots: the user may buy again.
	closed, gave, err := e.DB.CloseOrder(ctx, request(sess, "1-a", 7, 2, 1, 2), "test")
	require.NoError(t, err)
	require.Equal(t, seckill.StatusClosed, closed.Status)
	require.True(t, gave)
	o, err = e.DB.CreateOrder(ctx, request(sess, "1-c", 7, 1, 1), time.Now())
	require.NoError(t, err)
	require.Equal(t, seckill.StatusWaitPay, o.Status)
	require.Equal(t, 9, dbStock(t, e, sess.ID))
}

// Payment and close race on one order, many times: each order ends PAID or
// CLOSED with its stock back, never both and never neither; the loser of a
// close race is a late payment waiting for its refund.
func TestPaymentRacesClose(t *testing.T) {
	const n = 40
	e, sess := store(t, n, 1)
	ctx := context.Background()
	for i := 0; i < n; i++ {
		req := request(sess, fmt.Sprintf("1-%d", i), int64(i+1), 1, 1)
		_, err := e.DB.CreateOrder(ctx, req, time.Now())
		require.NoError(t, err)
		var wg sync.WaitGroup
		var outcome seckill.PaymentOutcome
		var closed *seckill.Order
		var gave bool
		wg.Add(2)
		go func() {
			defer wg.Done()
			var err error
			outcome, _, err = e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: fmt.Sprint("e", i),
				PaymentID: fmt.Sprint("p", i), OrderNo: req.OrderNo, AmountCents: 100, TraceID: "t"})
			require.NoError(t, err)
		}()
		go func() {
			defer wg.Done()
			var err error
			closed, gave, err = e.DB.CloseOrder(ctx, req, "pay_timeout")
			require.NoError(t, err)
		}()
		wg.Wait()
		o, err := e.DB.Order(ctx, req.OrderNo)
		require.NoError(t, err)
		switch outcome {
		case seckill.PaymentCaptured:
			require.Equal(t, seckill.StatusPaid, o.Status)
			require.Equal(t, seckill.StatusPaid, closed.Status)
			require.False(t, gave)
		case seckill.PaymentRefundPending:
			require.Equal(t, seckill.StatusRefundPending, o.Status)
			require.True(t, gave)
		default:
			t.Fatalf("unexpected outcome %s", outcome)
		}
	}
	snap, err := e.DB.SessionSnapshot(ctx, sess.ID, nil, time.Now())
	require.NoError(t, err)
	require.Equal(t, n, snap.DBStock+snap.HeldQty)
	require.Zero(t, snap.PaidPaymentMismatch)
	require.Zero(t, snap.LedgerMismatch)
}

// The driver fills placeholders in (one round trip per statement) unless
// the DSN names a charset of its own, which might be one where that is
// unsafe.
func TestNamesCharset(t *testing.T) {
	for dsn, want := range map[string]bool{
		"root@tcp(127.0.0.1:3306)/seckill":                            false,
		"root@tcp(127.0.0.1:3306)/seckill?parseTime=true&loc=UTC":     false,
		"root@tcp(127.0.0.1:3306)/seckill?charset=gbk":                true,
		"root@tcp(127.0.0.1:3306)/seckill?timeout=5s&charset=utf8mb4": true,
		"root@tcp(127.0.0.1:3306)/seckill?charset=%zz":                true, // unreadable: keep the driver's default
	} {
		require.Equal(t, want, mysql.NamesCharset(dsn), dsn)
	}
}

// Every change of an order moves its updated_at forward, even when the
// clock does not: updated_at versions the order's cached view, and a close
// and the late payment right after it in one millisecond must not tie.
func TestEveryChangeAdvancesUpdatedAt(t *testing.T) {
	e, sess := store(t, 5, 1)
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	e.DB.StopClockForTest(at)
	versions := func(no string) func(step string) {
		last := time.Time{}
		return func(step string) {
			t.Helper()
			o, err := e.DB.Order(ctx, no)
			require.NoError(t, err)
			require.True(t, o.UpdatedAt.After(last), "%s: updated_at %s, not after %s", step, o.UpdatedAt, last)
			last = o.UpdatedAt
		}
	}

	late := request(sess, "1-late", 1, 1, 1)
	_, err := e.DB.CreateOrder(ctx, late, at)
	require.NoError(t, err)
	step := versions(late.OrderNo)
	step("created")
	_, _, err = e.DB.CloseOrder(ctx, late, "pay_timeout")
	require.NoError(t, err)
	step("closed")
	outcome, o, err := e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: "e-late", PaymentID: "p-late",
		OrderNo: late.OrderNo, AmountCents: 100, TraceID: "t"})
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentRefundPending, outcome)
	require.Equal(t, seckill.StatusRefundPending, o.Status)
	step("paid late")
	// The refund workflow's two steps: the provider's refund, then its record.
	refundID, err := e.Provider.Refund(ctx, seckill.Refund{PaymentID: "p-late", OrderNo: late.OrderNo, AmountCents: 100})
	require.NoError(t, err)
	status, err := e.DB.MarkRefunded(ctx, "p-late", refundID)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusRefunded, status)
	step("refunded")

	// A clock that steps back does not take a version back either.
	paid := request(sess, "1-paid", 2, 1, 1)
	_, err = e.DB.CreateOrder(ctx, paid, at)
	require.NoError(t, err)
	step = versions(paid.OrderNo)
	step("created")
	e.DB.StopClockForTest(at.Add(-time.Hour))
	_, _, err = e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: "e-paid", PaymentID: "p-paid",
		OrderNo: paid.OrderNo, AmountCents: 100, TraceID: "t"})
	require.NoError(t, err)
	step("paid")
	e.RequireInvariants(sess.ID)
}

// Payments: duplicates change nothing, a wrong amount never pays the order
// but waits for its refund, a second payment of a paid order waits for a
// refund and the order stays PAID.
func TestApplyPaymentRules(t *testing.T) {
	e, sess := store(t, 5, 1)
	ctx := context.Background()
	req := request(sess, "1-a", 7, 1, 1)
	_, err := e.DB.CreateOrder(ctx, req, time.Now())
	require.NoError(t, err)
	pay := func(p, ev string, amount int64) (seckill.PaymentOutcome, seckill.Status, error) {
		out, o, err := e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: ev, PaymentID: p, OrderNo: "1-a", AmountCents: amount, TraceID: "t"})
		if err != nil {
			return out, "", err
		}
		return out, o.Status, nil
	}
	out, st, err := pay("p0", "e0", 99)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentRefundPending, out)
	require.Equal(t, seckill.StatusWaitPay, st)
	out, st, err = pay("p1", "e1", 100)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentCaptured, out)
	require.Equal(t, seckill.StatusPaid, st)
	out, _, err = pay("p1", "e2", 100)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentDuplicate, out)
	out, _, err = pay("p9", "e1", 100)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentDuplicate, out)
	out, st, err = pay("p2", "e3", 100)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentRefundPending, out)
	require.Equal(t, seckill.StatusPaid, st)
	_, _, err = e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: "x", PaymentID: "y", OrderNo: "1-zzz", AmountCents: 1})
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err))
	snap, err := e.DB.SessionSnapshot(ctx, sess.ID, nil, time.Now())
	require.NoError(t, err)
	require.Zero(t, snap.PaidPaymentMismatch)
	require.Equal(t, 4, snap.DBStock)
}

// Closing an order that has no row writes a CLOSED tombstone, so a late
// CreateOrder of the same number finds it and decrements nothing.
func TestCloseWithoutRowLeavesTombstone(t *testing.T) {
	e, sess := store(t, 5, 1)
	ctx := context.Background()
	req := request(sess, "1-a", 7, 1, 1)
	tomb, gave, err := e.DB.CloseOrder(ctx, req, "workflow_cancelled")
	require.NoError(t, err)
	require.Equal(t, seckill.StatusClosed, tomb.Status)
	require.False(t, gave)
	o, err := e.DB.CreateOrder(ctx, req, time.Now())
	require.NoError(t, err)
	require.Equal(t, seckill.StatusClosed, o.Status)
	require.Equal(t, tomb, o, "the tombstone as the close returned it is the row")
	require.Equal(t, 5, dbStock(t, e, sess.ID))
	// A second close is a no-op.
	again, gave, err := e.DB.CloseOrder(ctx, req, "again")
	require.NoError(t, err)
	require.Equal(t, tomb, again)
	require.False(t, gave)
}

// Concurrent creates of one session share a transaction (group commit):
// the outcome per order is what it would be alone, including a slot
// refused inside the batch, and the stock moves by exactly the sum.
func TestBatchedCreatesKeepEveryRule(t *testing.T) {
	e, sess := store(t, 100, 1)
	ctx := context.Background()
	counts := createConcurrently(t, e, 30, time.Minute, func(i int) *seckill.OrderRequest {
		user := int64(500 + i)
		if i == 29 {
			user = 500 // user 500's slot 1 twice: one of the two must fail
		}
		return request(sess, fmt.Sprintf("1-b%d", i), user, 1, 1)
	})
	require.Equal(t, map[seckill.Status]int{seckill.StatusWaitPay: 29, seckill.StatusFailed: 1}, counts)
	require.Equal(t, 71, dbStock(t, e, sess.ID))
	snap, err := e.DB.SessionSnapshot(ctx, sess.ID, nil, time.Now())
	require.NoError(t, err)
	require.Zero(t, snap.LedgerMismatch)
	require.Equal(t, 100, snap.DBStock+snap.HeldQty)
	require.Equal(t, 1, snap.MaxUserUnits)
}

// Closes that arrive together share a batch: every order closes, each
// gives its units back exactly once (a close sent twice at once gives back
// once), an order without a row gets its tombstone, and the stock and the
// ledger agree at the end.
func TestBatchedClosesGiveBackExactlyOnce(t *testing.T) {
	e, sess := store(t, 100, 1)
	ctx := context.Background()
	var reqs []*seckill.OrderRequest
	for i := 0; i < 30; i++ {
		req := request(sess, fmt.Sprintf("1-c%d", i), int64(700+i), 1, 1)
		_, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
		require.NoError(t, err)
		reqs = append(reqs, req)
	}
	require.Equal(t, 70, dbStock(t, e, sess.ID))
	never := request(sess, "1-cnone", 799, 1, 1) // its row never came
	var wg sync.WaitGroup
	var mu sync.Mutex
	gaveBack := map[string]int{}
	closeIt := func(req *seckill.OrderRequest) {
		defer wg.Done()
		closed, back, err := e.DB.CloseOrder(ctx, req, "pay_timeout")
		require.NoError(t, err)
		require.Equal(t, seckill.StatusClosed, closed.Status)
		if back {
			mu.Lock()
			gaveBack[req.OrderNo]++
			mu.Unlock()
		}
	}
	for _, req := range append(reqs, reqs[0], reqs[1], never) {
		wg.Add(1)
		go closeIt(req)
	}
	wg.Wait()
	require.Len(t, gaveBack, 30)
	for no, n := range gaveBack {
		require.Equal(t, 1, n, no)
	}
	require.Equal(t, 100, dbStock(t, e, sess.ID))
	snap, err := e.DB.SessionSnapshot(ctx, sess.ID, nil, time.Now())
	require.NoError(t, err)
	require.Zero(t, snap.LedgerMismatch)
	require.Zero(t, snap.HeldQty)
	o, err := e.DB.Order(ctx, never.OrderNo)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusClosed, o.Status, "the tombstone")
}

// Closes for two reasons, some sent twice, race payments of a third of
// the same orders, all at once, so that batches of closes meet payments
// under the rows' locks: each order ends PAID (its close lost), or
// REFUND_PENDING (its payment came after the close) or CLOSED, its units
// given back exactly once when it closed, and the stock, the ledger and the
// payments agree at the end.
func TestBatchedClosesRacePayments(t *testing.T) {
	const n = 60
	e, sess := store(t, n, 1)
	ctx := context.Background()
	reqs := make([]*seckill.OrderRequest, n)
	for i := range reqs {
		reqs[i] = request(sess, fmt.Sprintf("1-r%d", i), int64(900+i), 1, 1)
		_, err := e.DB.CreateOrder(ctx, reqs[i], time.Now().Add(time.Minute))
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	gaveBack := map[string]int{}
	closeIt := func(i int) {
		defer wg.Done()
		reason := "pay_timeout"
		if i%2 == 1 {
			reason = "cancelled"
		}
		_, back, err := e.DB.CloseOrder(ctx, reqs[i], reason)
		require.NoError(t, err)
		if back {
			mu.Lock()
			gaveBack[reqs[i].OrderNo]++
			mu.Unlock()
		}
	}
	for i := range reqs {
		wg.Add(1)
		go closeIt(i)
		if i%5 == 0 {
			wg.Add(1)
			go closeIt(i) // a retried close
		}
		if i%3 == 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: fmt.Sprint("e-r", i),
					PaymentID: fmt.Sprint("p-r", i), OrderNo: reqs[i].OrderNo, AmountCents: 100, TraceID: "t"})
				require.NoError(t, err)
			}()
		}
	}
	wg.Wait()
	for i, req := range reqs {
		o, err := e.DB.Order(ctx, req.OrderNo)
		require.NoError(t, err)
		switch o.Status {
		case seckill.StatusPaid:
			require.Zero(t, i%3, "only a paid order is PAID")
			require.Zero(t, gaveBack[req.OrderNo], req.OrderNo)
		case seckill.StatusRefundPending:
			require.Zero(t, i%3, "only a paid order waits for a refund")
			require.Equal(t, 1, gaveBack[req.OrderNo], req.OrderNo)
		case seckill.StatusClosed:
			require.NotZero(t, i%3, "a paid order is never just CLOSED")
			require.Equal(t, 1, gaveBack[req.OrderNo], req.OrderNo)
		default:
			t.Fatalf("order %s is %s", req.OrderNo, o.Status)
		}
	}
	snap, err := e.DB.SessionSnapshot(ctx, sess.ID, nil, time.Now())
	require.NoError(t, err)
	require.Equal(t, n, snap.DBStock+snap.HeldQty)
	require.Zero(t, snap.LedgerMismatch)
	require.Zero(t, snap.PaidPaymentMismatch)
}

// OpenSessions lists what has not ended, soonest start first, bounded.
func TestOpenSessions(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	mk := func(title string, start, end time.Duration) *seckill.Session {
		s := &seckill.Session{SKUID: 1, Title: title, PriceCents: 100, TotalStock: 1, PerUserLimit: 1,
			StartAt: now.Add(start), EndAt: now.Add(end)}
		require.NoError(t, e.DB.CreateSession(ctx, s, nil))
		return s
	}
	later := mk("later", 2*time.Hour, 3*time.Hour)
	mk("ended", -2*time.Hour, -time.Hour)
	active := mk("active", -time.Minute, time.Hour)
	soon := mk("soon", time.Minute, time.Hour)
	mk("just ended", -time.Hour, 0)

	got, err := e.DB.OpenSessions(ctx, now, 10)
	require.NoError(t, err)
	var titles []string
	for _, s := range got {
		titles = append(titles, s.Title)
	}
	require.Equal(t, []string{"active", "soon", "later"}, titles)
	require.Equal(t, active.ID, got[0].ID)
	require.Equal(t, soon.StartAt, got[1].StartAt)
	require.Equal(t, later.EndAt, got[2].EndAt)

	got, err = e.DB.OpenSessions(ctx, now, 2)
	require.NoError(t, err)
	require.Len(t, got, 2)
}
