// Package orders finds an order for its owner or an operator: the view
// Redis caches (the common path of polls and payments), a QUEUED view
// filled in from its session, and MySQL behind both, with a bounded
// memory of the numbers MySQL did not know. The handlers and the payment
// intake find orders through it alike.
package orders

import (
	"context"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/expiring"
)

// Views are the order views Redis caches (redis.Gate): a QUEUED order's
// made from its reservation; NOT_FOUND when Redis has none.
type Views interface {
	Order(ctx context.Context, orderNo string) (*seckill.Order, error)
}

// Rows are the orders' rows (MySQL); NOT_FOUND before one is created.
type Rows interface {
	Order(ctx context.Context, orderNo string) (*seckill.Order, error)
}

// Sessions give a QUEUED order's session (its SKU and price): the
// process's session cache.
type Sessions interface {
	Get(ctx context.Context, id int64) (*seckill.Session, error)
}

// Order numbers are chosen by the client, so each made-up one must not
// cost a database query per request nor memory that grows with every one
// ever tried. Their "not found" is remembered for unknownTTL, at most
// maxUnknown of them (the oldest go first), and concurrent lookups of one
// number share one query: at most one MySQL query per number per
// unknownTTL, whatever the request rate.
const (
	unknownTTL = time.Second
	maxUnknown = 1 << 16
	// lookupTimeout bounds a shared lookup, detached from the request that
	// started it: the others waiting on it must not fail because that one
	// went away.
	lookupTimeout = 3 * time.Second
)

// Finder finds orders (New).
type Finder struct {
	views    Views
	rows     Rows
	sessions Sessions
	// payTimeout is each order's: a QUEUED order's deadline counts from
	// its reservation.
	payTimeout time.Duration
	// Unknown holds the numbers MySQL did not know a moment ago.
	Unknown *expiring.Map[string, struct{}]
	group   singleflight.Group
}

// New builds a Finder.
func New(views Views, rows Rows, sessions Sessions, payTimeout time.Duration) *Finder {
	return &Finder{views: views, rows: rows, sessions: sessions, payTimeout: payTimeout,
		Unknown: expiring.New[string, struct{}](maxUnknown)}
}

// Find returns an order by number from the Redis view (the common path),
// falling back to MySQL, and fills in what a QUEUED view lacks from the
// session. An order of another user than owner (0: any, an operator's or
// a payment's lookup) is NOT_FOUND: its existence is not revealed. A
// number that cannot be one of ours ("<session id>-<unique>") is
// NOT_FOUND without a lookup.
func (f *Finder) Find(ctx context.Context, orderNo string, owner int64) (*seckill.Order, error) {
	if len(orderNo) > 64 {
		return nil, seckill.Errorf(seckill.EINVALID, "order_no is too long")
	}
	if _, ok := seckill.OrderNoSession(orderNo); !ok {
		return nil, notFound(orderNo)
	}
	// A path parameter is a view into the request buffer; the order found
	// may carry it (a QUEUED view) into signals and logs.
	orderNo = strings.Clone(orderNo)
	o, err := f.views.Order(ctx, orderNo)
	if code := seckill.ErrorCode(err); code == seckill.ENOTFOUND || code == seckill.EUNAVAILABLE {
		redisErr := err
		o, err = f.row(ctx, orderNo)
		if seckill.ErrorCode(err) == seckill.ENOTFOUND && code == seckill.EUNAVAILABLE {
			// A QUEUED order lives in Redis alone, and Redis could not
			// say: "not found" would be final for a payment provider (a
			// payment dropped) and for a polling shopper. Unknown is 503.
			return nil, redisErr
		}
	}
	if err != nil {
		return nil, err
	}
	if owner != 0 && o.UserID != owner {
		return nil, notFound(orderNo)
	}
	if o.Status == seckill.StatusQueued {
		sess, err := f.sessions.Get(ctx, o.SessionID)
		if err != nil {
			return nil, err
		}
		// What its workflow input will say (seckill.NewOrderRequest).
		req := seckill.NewOrderRequest(seckill.Reservation{Quantity: o.Quantity, SKUID: o.SKUID}, sess, 0)
		o.SKUID, o.Title, o.AmountCents, o.Currency = req.SKUID, req.Title, req.AmountCents(), sess.Currency
		if o.PayDeadline.IsZero() {
			// A QUEUED order is payable already, and its deadline counts
			// from the reservation (seckill.NewOrderRequest): the shopper
			// sees the same one before and after the row exists.
			o.PayDeadline = o.CreatedAt.Add(f.payTimeout)
		}
	}
	return o, nil
}

func notFound(orderNo string) error {
	return seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
}

// row returns the order from MySQL, reached when Redis has no view of it
// (expired after the sale, or Redis unavailable), or NOT_FOUND
// (remembered for a while). The caller owns the returned order:
// concurrent callers get copies.
func (f *Finder) row(ctx context.Context, orderNo string) (*seckill.Order, error) {
	if _, ok := f.Unknown.Get(orderNo, time.Now()); ok {
		return nil, notFound(orderNo)
	}
	v, err, _ := f.group.Do(orderNo, func() (any, error) {
		// A lookup that finished just before this one started has answered.
		if _, ok := f.Unknown.Get(orderNo, time.Now()); ok {
			return nil, notFound(orderNo)
		}
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		o, err := f.rows.Order(lctx, orderNo)
		if seckill.ErrorCode(err) == seckill.ENOTFOUND {
			f.Unknown.Put(orderNo, struct{}{}, time.Now().Add(unknownTTL))
		}
		return o, err
	})
	if err != nil {
		return nil, err
	}
	o := *v.(*seckill.Order)
	return &o, nil
}
