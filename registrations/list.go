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
	// Kept inside the flight: a caller arriving between the flight's end
	// and a keep after it would start a second read.
	v, err, _ := l.flight.Do(sess.RegistrantsDigest, func() (any, error) {
		list, err := seckill.RegistrantList(context.WithoutCancel(ctx), d.Store, sess)
		if err == nil {
			l.keep(sess.RegistrantsDigest, list)
		}
		return list, err
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// keep keeps a published list by its digest, the oldest let go past
// listsKept.
func (l *lists) keep(digest string, list []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.kept[digest]; ok {
		return
	}
	if l.kept == nil {
		l.kept = map[string][]byte{}
	}
	if len(l.order) == listsKept {
		delete(l.kept, l.order[0])
		l.order = l.order[1:]
	}
	l.kept[digest] = list
	l.order = append(l.order, digest)
}
