package storetest

import (
	"context"
	"sync"
	"time"

	"github.com/seckill/seckill"
)

type storedPayment struct {
	seckill.Payment
	captured bool // false: waits for its refund
}

type slot struct {
	user int64
	n    int
}

// MemStore is an in-memory MySQL store of one session for the order
// activities: CreateOrder idempotent on order_no, WAIT_PAY with the stock
// decremented and the user's slots taken, or FAILED (nothing taken) when
// the conditional decrement or a slot refuses; CloseOrder a compare-and-set
// WAIT_PAY→CLOSED that gives stock and slots back once, or a CLOSED
// tombstone when no row exists; ApplyPayment capturing, refunding or
// de-duplicating. Every change stamps the row's UpdatedAt, strictly
// increasing, as MySQL's updated_at does: the cached views keep the
// newest by it, so a late cache write of an older row loses here as there.
// It keeps operators' named tokens as well (operators.go). TestStore and
// TestOperatorStore hold it to mysql.DB's behaviour.
type MemStore struct {
	inj *Injector

	mu          sync.Mutex
	session     seckill.Session
	stock       int
	orders      map[string]*seckill.Order
	reasons     map[string]string
	slots       map[slot]string // the per-user limit's primary key: slot → order
	payments    []storedPayment
	decremented map[string]int // stock taken by CreateOrder, per order
	restored    map[string]int // stock given back by CloseOrder, per order
	clock       time.Time      // the last UpdatedAt stamped
	// operators are the named tokens by name (operators.go), stamped by
	// operatorClock when a test set it.
	operators     map[string]*storedOperator
	operatorClock time.Time
}

// stamp marks o changed now: UpdatedAt later than any before it.
func (s *MemStore) stamp(o *seckill.Order) *seckill.Order {
	now := time.Now().UTC().Truncate(time.Microsecond)
	if !now.After(s.clock) {
		now = s.clock.Add(time.Microsecond)
	}
	s.clock, o.UpdatedAt = now, now
	return o
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns a store holding session s with its total stock;
// inj (nil for none) injects faults into its calls.
func NewMemStore(inj *Injector, s seckill.Session) *MemStore {
	return &MemStore{inj: inj, session: s, stock: s.TotalStock, orders: map[string]*seckill.Order{},
		reasons: map[string]string{}, slots: map[slot]string{}, decremented: map[string]int{}, restored: map[string]int{},
		operators: map[string]*storedOperator{}}
}

func copyOrder(o *seckill.Order) *seckill.Order { c := *o; return &c }

// CreateOrder creates the order row; see MemStore.
func (s *MemStore) CreateOrder(_ context.Context, req *seckill.OrderRequest, payDeadline time.Time) (*seckill.Order, error) {
	return step(s.inj, CreateOrder, func() (*seckill.Order, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if o, ok := s.orders[req.OrderNo]; ok {
			return copyOrder(o), nil // a retry, or a tombstone: never a second decrement
		}
		if reason := s.refusal(req); reason != "" {
			o := s.stamp(req.Order(seckill.StatusFailed, time.Time{}))
			s.orders[req.OrderNo], s.reasons[req.OrderNo] = o, reason
			return copyOrder(o), nil
		}
		for _, n := range req.Slots {
			s.slots[slot{req.UserID, n}] = req.OrderNo
		}
		s.stock -= req.Quantity
		s.decremented[req.OrderNo] += req.Quantity
		o := s.stamp(req.Order(seckill.StatusWaitPay, payDeadline.UTC()))
		s.orders[req.OrderNo], s.reasons[req.OrderNo] = o, "created"
		return copyOrder(o), nil
	})
}

// refusal is why the database refuses req, or "".
func (s *MemStore) refusal(req *seckill.OrderRequest) string {
	for _, n := range req.Slots {
		if _, taken := s.slots[slot{req.UserID, n}]; taken {
			return "db_user_limit"
		}
	}
	if req.SessionID != s.session.ID || s.stock < req.Quantity {
		return "db_sold_out"
	}
	return ""
}

type closeResult struct {
	order    *seckill.Order
	gaveBack bool
}

// CloseOrder is the compensation's compare-and-set; see MemStore.
func (s *MemStore) CloseOrder(_ context.Context, req *seckill.OrderRequest, reason string) (*seckill.Order, bool, error) {
	r, err := step(s.inj, CloseOrder, func() (closeResult, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		o, ok := s.orders[req.OrderNo]
		if !ok {
			o = s.stamp(req.Order(seckill.StatusClosed, time.Time{}))
			s.orders[req.OrderNo], s.reasons[req.OrderNo] = o, reason
			return closeResult{order: copyOrder(o)}, nil
		}
		t := o.Status.Close(reason)
		if t == nil {
			return closeResult{order: copyOrder(o)}, nil
		}
		o.Status, s.reasons[req.OrderNo] = t.To, t.Reason
		s.stamp(o)
		for k, no := range s.slots {
			if no == o.OrderNo {
				delete(s.slots, k)
			}
		}
		s.stock += o.Quantity
		s.restored[req.OrderNo] += o.Quantity
		return closeResult{order: copyOrder(o), gaveBack: true}, nil
	})
	return r.order, r.gaveBack, err
}

type applyResult struct {
	outcome seckill.PaymentOutcome
	order   *seckill.Order
}

// ApplyPayment mirrors mysql.DB.ApplyPayment: duplicates change nothing,
// and the order makes Status.Pay's transition (any other status, or a
// wrong amount or currency, keeps the order and queues the payment for a
// refund).
func (s *MemStore) ApplyPayment(_ context.Context, p *seckill.Payment) (seckill.PaymentOutcome, *seckill.Order, error) {
	r, err := step(s.inj, ApplyPayment, func() (applyResult, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		o, ok := s.orders[p.OrderNo]
		if !ok {
			return applyResult{}, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", p.OrderNo)
		}
		for _, q := range s.payments {
			if q.PaymentID == p.PaymentID || q.EventID == p.EventID {
				return applyResult{seckill.PaymentDuplicate, copyOrder(o)}, nil
			}
		}
		outcome, t := o.Status.Pay(p.Pays(o.AmountCents, o.Currency))
		s.payments = append(s.payments, storedPayment{Payment: *p, captured: outcome == seckill.PaymentCaptured})
		if t != nil {
			o.Status, s.reasons[o.OrderNo] = t.To, t.Reason
			s.stamp(o)
		}
		return applyResult{outcome, copyOrder(o)}, nil
	})
	return r.outcome, r.order, err
}

// Order returns the row of an order, NOT_FOUND without one.
func (s *MemStore) Order(_ context.Context, orderNo string) (*seckill.Order, error) {
	return step(s.inj, ReadOrder, func() (*seckill.Order, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		o, ok := s.orders[orderNo]
		if !ok {
			return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
		}
		return copyOrder(o), nil
	})
}

// Session returns the session and its database stock.
func (s *MemStore) Session(_ context.Context, id int64) (*seckill.Session, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.session.ID {
		return nil, 0, seckill.Errorf(seckill.ENOTFOUND, "session %d not found", id)
	}
	sess := s.session
	return &sess, s.stock, nil
}

// Seed stores a row as it is, taking its stock if it holds some, without
// any admission: a row Redis does not know (it lost its data), or one
// decided before the workflow ran.
func (s *MemStore) Seed(o *seckill.Order) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.orders[o.OrderNo] = copyOrder(o)
	if o.Status.HoldsStock() {
		s.stock -= o.Quantity
		s.decremented[o.OrderNo] += o.Quantity
	}
}

// Status is the status of an order's row, "" without one.
func (s *MemStore) Status(orderNo string) seckill.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.orders[orderNo]; ok {
		return o.Status
	}
	return ""
}

// Reason is the reason recorded with an order's last change.
func (s *MemStore) Reason(orderNo string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reasons[orderNo]
}

// Counts are the units CreateOrder took for an order and those CloseOrder
// gave back.
func (s *MemStore) Counts(orderNo string) (decremented, restored int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decremented[orderNo], s.restored[orderNo]
}

// StockLeft is the database stock.
func (s *MemStore) StockLeft() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stock
}

// Payments returns the payment ids of an order: captured, and waiting for
// their refund.
func (s *MemStore) Payments(orderNo string) (captured, refunds []string) {
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
