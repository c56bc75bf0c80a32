package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
)

// Store is what TestStore checks: the order activities' MySQL side, and
// the session's database stock, to see what each call moved.
type Store interface {
	activities.Store
	Session(ctx context.Context, id int64) (*seckill.Session, int, error)
}

// Gate is what TestGate checks: the order activities' Redis side, with the
// admission that makes the reservations it releases, the live stock and
// the cached views.
type Gate interface {
	activities.Gate
	Admit(ctx context.Context, s *seckill.Session, userID int64, qty int, orderNo, traceID string, now time.Time) (*seckill.Reservation, int, error)
	Stock(ctx context.Context, sessionID int64) (int, bool, error)
	Order(ctx context.Context, orderNo string) (*seckill.Order, error)
}

// NewStore returns a store holding a fresh session (never sold from) of
// stock units, at most limit per shopper.
type NewStore func(t *testing.T, stock, limit int) (Store, *seckill.Session)

// NewGate returns a gate with a fresh session preheated: stock units, at
// most limit per shopper.
type NewGate func(t *testing.T, stock, limit int) (Gate, *seckill.Session)

// Request is the workflow input of an order of sess as the admission made
// it: order number <session>-<suffix>, slots as handed out.
func Request(sess *seckill.Session, suffix string, user int64, qty int, slots ...int) *seckill.OrderRequest {
	no := fmt.Sprintf("%d-%s", sess.ID, suffix)
	return &seckill.OrderRequest{
		Reservation: seckill.Reservation{OrderNo: no, SessionID: sess.ID, UserID: user, Quantity: qty,
			Slots: slots, ReservedAt: time.Now().UTC().Truncate(time.Millisecond), TraceID: "trace-" + no, SKUID: sess.SKUID},
		PriceCents: sess.PriceCents, PayTimeout: time.Minute,
	}
}

// pay is a payment of req; its ids are unique to the order (payments of
// every session share one table).
func pay(req *seckill.OrderRequest, id string) *seckill.Payment {
	id = req.OrderNo + "/" + id
	return &seckill.Payment{EventID: "evt-" + id, PaymentID: id, OrderNo: req.OrderNo,
		AmountCents: req.AmountCents(), TraceID: "trace-" + id}
}

var ctx = context.Background()

func deadline() time.Time { return time.Now().Add(time.Minute).UTC().Truncate(time.Millisecond) }

func requireStock(t *testing.T, s Store, sess *seckill.Session, want int) {
	t.Helper()
	_, n, err := s.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, want, n, "database stock")
}

func create(t *testing.T, s Store, req *seckill.OrderRequest, want seckill.Status) *seckill.Order {
	t.Helper()
	o, err := s.CreateOrder(ctx, req, deadline())
	require.NoError(t, err)
	require.Equal(t, want, o.Status, "%s created", req.OrderNo)
	return o
}

// closeOrder closes req and checks the order it returns: want, and the
// row as stored (the activity caches it as the view without a read).
func closeOrder(t *testing.T, s Store, req *seckill.OrderRequest, want seckill.Status, gaveBack bool) {
	t.Helper()
	o, gave, err := s.CloseOrder(ctx, req, "contract")
	require.NoError(t, err)
	require.Equal(t, want, o.Status, "%s closed", req.OrderNo)
	require.Equal(t, gaveBack, gave, "%s: close gave back", req.OrderNo)
	requireStored(t, s, o)
}

// applyPayment applies p and checks what it returns, as closeOrder.
func applyPayment(t *testing.T, s Store, p *seckill.Payment, outcome seckill.PaymentOutcome, status seckill.Status) {
	t.Helper()
	got, o, err := s.ApplyPayment(ctx, p)
	require.NoError(t, err)
	require.Equal(t, outcome, got, "payment %s", p.PaymentID)
	require.Equal(t, status, o.Status, "order after payment %s", p.PaymentID)
	requireStored(t, s, o)
}

// requireStored checks that o is its row as read back.
func requireStored(t *testing.T, s Store, o *seckill.Order) {
	t.Helper()
	row, err := s.Order(ctx, o.OrderNo)
	require.NoError(t, err)
	require.Equal(t, row, o, "%s: the order returned is the row as stored", o.OrderNo)
}

func requireStatus(t *testing.T, s Store, orderNo string, want seckill.Status) {
	t.Helper()
	o, err := s.Order(ctx, orderNo)
	require.NoError(t, err)
	require.Equal(t, want, o.Status, orderNo)
}

// TestStore runs the contract of the order activities' MySQL side against
// the stores newStore makes.
func TestStore(t *testing.T, newStore NewStore) {
	t.Run("CreateOrderTakesStockOnce", func(t *testing.T) {
		s, sess := newStore(t, 5, 2)
		req := Request(sess, "a", 7, 2, 1, 2)
		due := deadline()
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o, err := s.CreateOrder(ctx, req, due)
				if !assertNoError(t, err) {
					return
				}
				if o.Status != seckill.StatusWaitPay {
					t.Errorf("a concurrent retry got %s", o.Status)
				}
			}()
		}
		wg.Wait()
		o := create(t, s, req, seckill.StatusWaitPay)
		requireStock(t, s, sess, 3)
		got, err := s.Order(ctx, req.OrderNo)
		require.NoError(t, err)
		require.Equal(t, got, o, "a retry returns the row as stored")
		for _, v := range []*seckill.Order{o, got} {
			require.Equal(t, req.OrderNo, v.OrderNo)
			require.Equal(t, sess.ID, v.SessionID)
			require.Equal(t, sess.SKUID, v.SKUID)
			require.Equal(t, req.UserID, v.UserID)
			require.Equal(t, 2, v.Quantity)
			require.Equal(t, 2*sess.PriceCents, v.AmountCents)
			require.Equal(t, seckill.StatusWaitPay, v.Status)
			require.True(t, due.Equal(v.PayDeadline), "deadline %v, want %v", v.PayDeadline, due)
		}
	})

	t.Run("CreateOrderReturnsTheRowAsStored", func(t *testing.T) {
		// The activity caches what CreateOrder returns as the order's view
		// without reading it back: it must equal the row to the last field,
		// whatever the precision of the deadline it was given, for orders
		// created alone and together (the batch), new and refused.
		s, sess := newStore(t, 3, 1)
		due := time.Now().Add(time.Minute).Add(123456 * time.Nanosecond)
		reqs := []*seckill.OrderRequest{Request(sess, "r1", 1, 1, 1), Request(sess, "r2", 2, 1, 1),
			Request(sess, "r3", 3, 1, 1), Request(sess, "r4", 3, 1, 1)} // r4: user 3's slot is r3's
		outs := make([]*seckill.Order, len(reqs))
		var wg sync.WaitGroup
		for i, req := range reqs[:3] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o, err := s.CreateOrder(ctx, req, due)
				if assertNoError(t, err) {
					outs[i] = o
				}
			}()
		}
		wg.Wait()
		o, err := s.CreateOrder(ctx, reqs[3], due)
		require.NoError(t, err)
		outs[3] = o
		for i, req := range reqs {
			got, err := s.Order(ctx, req.OrderNo)
			require.NoError(t, err)
			require.Equal(t, got, outs[i], "%s: returned vs stored", req.OrderNo)
		}
		require.Equal(t, seckill.StatusFailed, outs[3].Status)
		requireStock(t, s, sess, 0)
	})

	t.Run("RefusedOrdersEndFailedAndTakeNothing", func(t *testing.T) {
		s, sess := newStore(t, 3, 3)
		short := Request(sess, "short", 7, 4, 1, 2, 3)
		create(t, s, short, seckill.StatusFailed)
		create(t, s, short, seckill.StatusFailed) // a retry
		create(t, s, Request(sess, "first", 8, 1, 1), seckill.StatusWaitPay)
		// The slot is the per-user limit's key: Redis handing it out twice
		// (it lost its data) never makes a second order.
		create(t, s, Request(sess, "again", 8, 1, 1), seckill.StatusFailed)
		requireStock(t, s, sess, 2)
		requireStatus(t, s, short.OrderNo, seckill.StatusFailed)
	})

	t.Run("CloseGivesBackOnce", func(t *testing.T) {
		s, sess := newStore(t, 5, 2)
		req := Request(sess, "a", 7, 2, 1, 2)
		create(t, s, req, seckill.StatusWaitPay)
		closeOrder(t, s, req, seckill.StatusClosed, true)
		requireStock(t, s, sess, 5)
		closeOrder(t, s, req, seckill.StatusClosed, false) // a retry
		requireStock(t, s, sess, 5)
		requireStatus(t, s, req.OrderNo, seckill.StatusClosed)
		// The user's slots came back with the stock.
		create(t, s, Request(sess, "b", 7, 2, 1, 2), seckill.StatusWaitPay)
		requireStock(t, s, sess, 3)
	})

	t.Run("CloseWithoutRowLeavesTombstone", func(t *testing.T) {
		s, sess := newStore(t, 5, 2)
		req := Request(sess, "a", 7, 1, 1)
		closeOrder(t, s, req, seckill.StatusClosed, false)
		create(t, s, req, seckill.StatusClosed) // a straggling create
		requireStock(t, s, sess, 5)
	})

	t.Run("CloseLeavesDecidedOrders", func(t *testing.T) {
		s, sess := newStore(t, 2, 2)
		paid := Request(sess, "paid", 7, 2, 1, 2)
		create(t, s, paid, seckill.StatusWaitPay)
		applyPayment(t, s, pay(paid, "p1"), seckill.PaymentCaptured, seckill.StatusPaid)
		closeOrder(t, s, paid, seckill.StatusPaid, false)
		failed := Request(sess, "failed", 8, 1, 1)
		create(t, s, failed, seckill.StatusFailed)
		closeOrder(t, s, failed, seckill.StatusFailed, false)
		requireStock(t, s, sess, 0)
	})

	t.Run("PaymentsCaptureOnceAndQueueTheRest", func(t *testing.T) {
		s, sess := newStore(t, 5, 2)
		req := Request(sess, "a", 7, 1, 1)
		create(t, s, req, seckill.StatusWaitPay)
		applyPayment(t, s, pay(req, "p1"), seckill.PaymentCaptured, seckill.StatusPaid)
		applyPayment(t, s, pay(req, "p1"), seckill.PaymentDuplicate, seckill.StatusPaid)
		sameEvent := pay(req, "p1b")
		sameEvent.EventID = pay(req, "p1").EventID
		applyPayment(t, s, sameEvent, seckill.PaymentDuplicate, seckill.StatusPaid)
		applyPayment(t, s, pay(req, "p2"), seckill.PaymentRefundPending, seckill.StatusPaid)
		applyPayment(t, s, pay(req, "p2"), seckill.PaymentDuplicate, seckill.StatusPaid)
		requireStatus(t, s, req.OrderNo, seckill.StatusPaid)
		requireStock(t, s, sess, 4)
	})

	t.Run("WrongAmountWaitsForItsRefund", func(t *testing.T) {
		s, sess := newStore(t, 5, 2)
		req := Request(sess, "a", 7, 1, 1)
		create(t, s, req, seckill.StatusWaitPay)
		bad := pay(req, "bad")
		bad.AmountCents = 1
		applyPayment(t, s, bad, seckill.PaymentRefundPending, seckill.StatusWaitPay)
		applyPayment(t, s, bad, seckill.PaymentDuplicate, seckill.StatusWaitPay)
		applyPayment(t, s, pay(req, "good"), seckill.PaymentCaptured, seckill.StatusPaid)
	})

	t.Run("WrongCurrencyWaitsForItsRefund", func(t *testing.T) {
		s, sess := newStore(t, 5, 2)
		req := Request(sess, "a", 7, 1, 1)
		req.Currency = "usd"
		create(t, s, req, seckill.StatusWaitPay)
		yen := pay(req, "yen") // the order's digits, in yen
		yen.Currency = "jpy"
		applyPayment(t, s, yen, seckill.PaymentRefundPending, seckill.StatusWaitPay)
		dollars := pay(req, "usd")
		dollars.Currency = "usd"
		applyPayment(t, s, dollars, seckill.PaymentCaptured, seckill.StatusPaid)
	})

	t.Run("LatePaymentsNeverReopen", func(t *testing.T) {
		s, sess := newStore(t, 1, 2)
		closed := Request(sess, "closed", 7, 1, 1)
		create(t, s, closed, seckill.StatusWaitPay)
		closeOrder(t, s, closed, seckill.StatusClosed, true)
		applyPayment(t, s, pay(closed, "late"), seckill.PaymentRefundPending, seckill.StatusRefundPending)
		applyPayment(t, s, pay(closed, "late"), seckill.PaymentDuplicate, seckill.StatusRefundPending)
		requireStock(t, s, sess, 1)
		failed := Request(sess, "failed", 8, 2, 1, 2)
		create(t, s, failed, seckill.StatusFailed)
		applyPayment(t, s, pay(failed, "onfailed"), seckill.PaymentRefundPending, seckill.StatusFailed)
		requireStatus(t, s, failed.OrderNo, seckill.StatusFailed)
	})

	t.Run("PaymentRacesClose", func(t *testing.T) {
		s, sess := newStore(t, 1, 1)
		req := Request(sess, "a", 7, 1, 1)
		create(t, s, req, seckill.StatusWaitPay)
		var gaveBack bool
		var outcome seckill.PaymentOutcome
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, g, err := s.CloseOrder(ctx, req, "contract")
			assertNoError(t, err)
			gaveBack = g
		}()
		go func() {
			defer wg.Done()
			got, _, err := s.ApplyPayment(ctx, pay(req, "p"))
			assertNoError(t, err)
			outcome = got
		}()
		wg.Wait()
		o, err := s.Order(ctx, req.OrderNo)
		require.NoError(t, err)
		if gaveBack {
			require.Equal(t, seckill.PaymentRefundPending, outcome)
			require.Equal(t, seckill.StatusRefundPending, o.Status)
			requireStock(t, s, sess, 1)
		} else {
			require.Equal(t, seckill.PaymentCaptured, outcome)
			require.Equal(t, seckill.StatusPaid, o.Status)
			requireStock(t, s, sess, 0)
		}
	})

	t.Run("UnknownOrderIsNotFound", func(t *testing.T) {
		s, sess := newStore(t, 1, 1)
		req := Request(sess, "nobody", 7, 1, 1)
		_, err := s.Order(ctx, req.OrderNo)
		require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), "%v", err)
		_, _, err = s.ApplyPayment(ctx, pay(req, "p"))
		require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), "%v", err)
	})
}

// assertNoError is require.NoError for other goroutines than the test's.
func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

func admit(t *testing.T, g Gate, sess *seckill.Session, suffix string, user int64, qty int) *seckill.Reservation {
	t.Helper()
	r, _, err := g.Admit(ctx, sess, user, qty, fmt.Sprintf("%d-%s", sess.ID, suffix), "trace-"+suffix, time.Now())
	require.NoError(t, err)
	return r
}

func requireRedisStock(t *testing.T, g Gate, sess *seckill.Session, want int) {
	t.Helper()
	n, ok, err := g.Stock(ctx, sess.ID)
	require.NoError(t, err)
	require.True(t, ok, "session %d preheated", sess.ID)
	require.Equal(t, want, n, "Redis stock")
}

func release(t *testing.T, g Gate, sessionID int64, orderNo string, want int) {
	t.Helper()
	n, err := g.Release(ctx, sessionID, orderNo)
	require.NoError(t, err)
	require.Equal(t, want, n, "units released of %s", orderNo)
}

func requireView(t *testing.T, g Gate, orderNo string, want seckill.Status) {
	t.Helper()
	o, err := g.Order(ctx, orderNo)
	require.NoError(t, err)
	require.Equal(t, want, o.Status, "view of %s", orderNo)
}

// TestGate runs the contract of the order activities' Redis side against
// the gates newGate makes.
func TestGate(t *testing.T, newGate NewGate) {
	t.Run("AdmitReservesAndHandsOutSlots", func(t *testing.T) {
		g, sess := newGate(t, 5, 3)
		r := admit(t, g, sess, "a", 7, 2)
		require.Equal(t, []int{1, 2}, r.Slots)
		require.Equal(t, sess.ID, r.SessionID)
		require.Equal(t, int64(7), r.UserID)
		require.Equal(t, 2, r.Quantity)
		require.Equal(t, []int{3}, admit(t, g, sess, "b", 7, 1).Slots)
		requireRedisStock(t, g, sess, 2)
		o, err := g.Order(ctx, r.OrderNo)
		require.NoError(t, err)
		require.Equal(t, seckill.StatusQueued, o.Status)
		require.Equal(t, int64(7), o.UserID)
		require.Equal(t, 2, o.Quantity)
		require.Equal(t, "trace-a", o.TraceID)
	})

	t.Run("AdmissionRefusals", func(t *testing.T) {
		g, sess := newGate(t, 3, 2)
		code := func(user int64, qty int, suffix string, s *seckill.Session) string {
			_, _, err := g.Admit(ctx, s, user, qty, fmt.Sprintf("%d-%s", sess.ID, suffix), "t", time.Now())
			return seckill.ErrorCode(err)
		}
		require.Equal(t, seckill.ELIMIT, code(7, 3, "over", sess))
		admit(t, g, sess, "a", 8, 2)
		require.Equal(t, seckill.ESOLDOUT, code(9, 2, "short", sess))
		require.Equal(t, seckill.ECONFLICT, code(9, 1, "a", sess), "order number taken")
		require.Equal(t, "", code(8, 2, "a", sess), "the same attempt again")
		requireRedisStock(t, g, sess, 1)
		other := *sess
		other.ID += 1000
		require.Equal(t, seckill.EUNAVAILABLE, code(9, 1, "cold", &other), "not preheated")
	})

	t.Run("ReleaseGivesBackOnce", func(t *testing.T) {
		g, sess := newGate(t, 5, 2)
		r := admit(t, g, sess, "a", 7, 2)
		var total sync.Mutex
		got := 0
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := g.Release(ctx, sess.ID, r.OrderNo)
				assertNoError(t, err)
				total.Lock()
				got += n
				total.Unlock()
			}()
		}
		wg.Wait()
		require.Equal(t, 2, got, "units given back over concurrent releases")
		release(t, g, sess.ID, r.OrderNo, 0)
		requireRedisStock(t, g, sess, 5)
		_, err := g.Order(ctx, r.OrderNo)
		require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), "%v", err)
		// The user's limit and slots came back too.
		require.Equal(t, []int{1, 2}, admit(t, g, sess, "b", 7, 2).Slots)
	})

	t.Run("ReleaseOfWhatItDoesNotHold", func(t *testing.T) {
		g, sess := newGate(t, 5, 2)
		r := admit(t, g, sess, "a", 7, 1)
		release(t, g, sess.ID, fmt.Sprintf("%d-nobody", sess.ID), 0)
		release(t, g, sess.ID+1000, r.OrderNo, 0)
		requireRedisStock(t, g, sess, 4)
		release(t, g, sess.ID, r.OrderNo, 1)
	})

	t.Run("ViewsKeepTheNewest", func(t *testing.T) {
		g, o := viewedOrder(t, newGate)
		t0 := o.UpdatedAt
		require.NoError(t, g.PutOrder(ctx, o))
		requireView(t, g, o.OrderNo, seckill.StatusWaitPay)
		for _, v := range []struct {
			status seckill.Status
			at     time.Duration
			want   seckill.Status
		}{
			{seckill.StatusClosed, time.Millisecond, seckill.StatusClosed},
			{seckill.StatusWaitPay, 0, seckill.StatusClosed}, // stale: loses
			{seckill.StatusRefundPending, time.Millisecond, seckill.StatusRefundPending},
			{seckill.StatusRefunded, 2 * time.Millisecond, seckill.StatusRefunded},
		} {
			next := *o
			next.Status, next.UpdatedAt = v.status, t0.Add(v.at)
			require.NoError(t, g.PutOrder(ctx, &next))
			requireView(t, g, o.OrderNo, v.want)
		}
	})

	t.Run("NewOrderViewsLoseTies", func(t *testing.T) {
		// CreateOrder caches the row it created without reading it back;
		// a close in the same millisecond, read from the row, must win
		// whichever is cached last.
		g, created := viewedOrder(t, newGate)
		t0 := created.UpdatedAt
		require.NoError(t, g.PutNewOrder(ctx, created))
		requireView(t, g, created.OrderNo, seckill.StatusWaitPay) // nothing cached: written
		closed := *created
		closed.Status = seckill.StatusClosed
		require.NoError(t, g.PutOrder(ctx, &closed))
		requireView(t, g, created.OrderNo, seckill.StatusClosed) // a tie read from the row wins
		require.NoError(t, g.PutNewOrder(ctx, created))
		requireView(t, g, created.OrderNo, seckill.StatusClosed) // the late creation loses it
		later := *created
		later.UpdatedAt = t0.Add(time.Millisecond)
		require.NoError(t, g.PutNewOrder(ctx, &later))
		requireView(t, g, created.OrderNo, seckill.StatusWaitPay) // newer still wins
	})
}

// viewedOrder is a gate with one admitted order and that order's WAIT_PAY
// view as its creation makes it (updated now, to the millisecond), not
// cached yet.
func viewedOrder(t *testing.T, newGate NewGate) (Gate, *seckill.Order) {
	g, sess := newGate(t, 5, 2)
	r := admit(t, g, sess, "a", 7, 1)
	return g, &seckill.Order{OrderNo: r.OrderNo, SessionID: sess.ID, UserID: 7, Quantity: 1,
		Status: seckill.StatusWaitPay, UpdatedAt: time.Now().UTC().Truncate(time.Millisecond)}
}
