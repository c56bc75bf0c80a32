package registrations

import (
	"context"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill"
)

// listsKept is how many sales' published lists a desk keeps in memory: the
// lists of the draws under way, a few at a time.
const listsKept = 4

// lists keeps the published registrant lists a desk served. A published
// list never changes, so it is read from the truth once per process (one
// read for the shoppers asking at once) and kept by its digest.
type lists struct {
	mu     sync.Mutex
	kept   map[string][]byte // digest → list
	order  []string          // digests, oldest first
	flight singleflight.Group
}

// List is a sale's published registrant list (seckill.RegistrantList):
// CONFLICT before registration closed.
func (d *Desk) List(ctx context.Context, sess *seckill.Session) ([]byte, error) {
	if sess.RegistrantsDigest == "" {
		return seckill.RegistrantList(ctx, d.Store, sess) // its CONFLICT
	}
	l := &d.lists
	l.mu.Lock()
	list, ok := l.kept[sess.RegistrantsDigest]
	l.mu.Unlock()
	if ok {
		return list, nil
	}
	v, err, _ := l.flight.Do(sess.RegistrantsDigest, func() (any, error) {
		return seckill.RegistrantList(context.WithoutCancel(ctx), d.Store, sess)
	})
	if err != nil {
		return nil, err
	}
	list = v.([]byte)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.kept[sess.RegistrantsDigest]; !ok {
		if l.kept == nil {
			l.kept = map[string][]byte{}
		}
		if len(l.order) == listsKept {
			delete(l.kept, l.order[0])
			l.order = l.order[1:]
		}
		l.kept[sess.RegistrantsDigest] = list
		l.order = append(l.order, sess.RegistrantsDigest)
	}
	return list, nil
}
