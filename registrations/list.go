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
	if list, ok := l.lookup(sess.RegistrantsDigest); ok {
		return list, nil
	}
	// Kept inside the flight, and looked for again inside it: a caller
	// that missed just before an earlier flight kept the list would
	// otherwise read it a second time.
	v, err, _ := l.flight.Do(sess.RegistrantsDigest, func() (any, error) {
		if list, ok := l.lookup(sess.RegistrantsDigest); ok {
			return list, nil
		}
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

// lookup is a list kept by its digest.
func (l *lists) lookup(digest string) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	list, ok := l.kept[digest]
	return list, ok
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
