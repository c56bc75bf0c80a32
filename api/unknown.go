package api

import (
	"context"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/expiring"
)

// Unknown ids (sessions, order numbers) are chosen by the client, so each
// made-up one must not cost a database query per request nor memory that
// grows with every one ever tried. Their "not found" is remembered for
// unknownTTL, at most maxUnknown of them per cache (the oldest go first),
// and concurrent lookups of one id share one query: at most one MySQL query
// per id per unknownTTL, whatever the request rate. A second is also what an
// admin change may take to reach every API process, so a session created
// right after someone asked for its id is not hidden for longer than that.
const (
	unknownTTL = time.Second
	maxUnknown = 1 << 16
	// lookupTimeout bounds a shared lookup, detached from the request that
	// started it: the others waiting on it must not fail because that one
	// went away.
	lookupTimeout = 3 * time.Second
)

// orderLookup is the MySQL side of findOrder, reached when Redis has no
// view of an order (expired after the sale, or Redis unavailable).
type orderLookup struct {
	load    func(ctx context.Context, orderNo string) (*seckill.Order, error)
	group   singleflight.Group
	unknown *expiring.Map[string, struct{}]
}

func newOrderLookup(load func(context.Context, string) (*seckill.Order, error)) *orderLookup {
	return &orderLookup{load: load, unknown: expiring.New[string, struct{}](maxUnknown)}
}

func orderNotFound(orderNo string) error {
	return seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
}

// get returns the order from MySQL, or NOT_FOUND (remembered for a while).
// The caller owns the returned order: concurrent callers get copies.
func (l *orderLookup) get(ctx context.Context, orderNo string) (*seckill.Order, error) {
	if _, ok := l.unknown.Get(orderNo, time.Now()); ok {
		return nil, orderNotFound(orderNo)
	}
	// The number may point into a request buffer Fiber reuses; the cache
	// keeps it beyond this request.
	orderNo = strings.Clone(orderNo)
	v, err, _ := l.group.Do(orderNo, func() (any, error) {
		// A lookup that finished just before this one started has answered.
		if _, ok := l.unknown.Get(orderNo, time.Now()); ok {
			return nil, orderNotFound(orderNo)
		}
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		o, err := l.load(lctx, orderNo)
		if seckill.ErrorCode(err) == seckill.ENOTFOUND {
			l.unknown.Put(orderNo, struct{}{}, time.Now().Add(unknownTTL))
		}
		return o, err
	})
	if err != nil {
		return nil, err
	}
	o := *v.(*seckill.Order)
	return &o, nil
}
