// Package expiring is a bounded map whose entries expire, for state keyed
// by what a client chooses.
package expiring

import (
	"sync"
	"time"
)

// Map is a map whose entries expire and whose size has a hard bound,
// for state keyed by what a client chooses (ids it made up, its address):
// a flood of distinct keys must cost bounded memory, never a map that only
// grows. Entries live in two generations of at most half the bound each;
// when the young one is full it becomes the old one and the old one is
// dropped whole, so an insert costs O(1) with no scan and no per-entry list.
// A hit in the old generation moves the entry to the young one, so keys in
// use survive the turnover and a flood evicts only keys that were idle.
// Expired entries are ignored on lookup and go with their generation.
//
// The map keeps the keys Put and GetOrPut are given, never one Get is
// asked with: a lookup may pass a view of a buffer that is reused once it
// returns (a request's header under fasthttp), and a key that changes
// under the map makes an entry answer for another key. A promoted entry
// moves under the key it was stored with.
type Map[K comparable, V any] struct {
	half int

	mu    sync.Mutex
	young map[K]entry[K, V]
	old   map[K]entry[K, V]
}

type entry[K comparable, V any] struct {
	key     K // as stored: the map's own
	v       V
	expires time.Time
}

// New returns a map that holds at most max entries (at least 2).
func New[K comparable, V any](max int) *Map[K, V] {
	half := max / 2
	if half < 1 {
		half = 1
	}
	return &Map[K, V]{half: half, young: make(map[K]entry[K, V]), old: make(map[K]entry[K, V])}
}

// Get returns the value of k if it is there and not expired at now; k is
// not kept.
func (m *Map[K, V]) Get(k K, now time.Time) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.lookup(k, now); ok {
		return e.v, true
	}
	var zero V
	return zero, false
}

// GetOrPut returns the value of k, storing mk()'s first if k is absent or
// expired; either way k then lives until now+ttl. A k that is stored must
// not change afterwards (copy a view of a reused buffer first).
func (m *Map[K, V]) GetOrPut(k K, now time.Time, ttl time.Duration, mk func() V) V {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.lookup(k, now)
	if !ok {
		e = entry[K, V]{key: k, v: mk()}
	}
	e.expires = now.Add(ttl)
	m.store(e)
	return e.v
}

// Put stores v for k until expires; k must not change afterwards (copy a
// view of a reused buffer first).
func (m *Map[K, V]) Put(k K, v V, expires time.Time) {
	m.mu.Lock()
	m.store(entry[K, V]{key: k, v: v, expires: expires})
	m.mu.Unlock()
}

// Remove drops k.
func (m *Map[K, V]) Remove(k K) {
	m.mu.Lock()
	delete(m.young, k)
	delete(m.old, k)
	m.mu.Unlock()
}

// Len is the number of entries held, expired ones included: the memory cost.
func (m *Map[K, V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.young) + len(m.old)
}

// lookup finds k (m.mu held), promoting it from the old generation.
func (m *Map[K, V]) lookup(k K, now time.Time) (entry[K, V], bool) {
	if e, ok := m.young[k]; ok {
		return e, now.Before(e.expires)
	}
	e, ok := m.old[k]
	if !ok || !now.Before(e.expires) {
		return entry[K, V]{}, false
	}
	m.store(e) // under its own key, not k
	return e, true
}

// store puts e under its key (m.mu held), turning the generations over
// first when the young one is full.
func (m *Map[K, V]) store(e entry[K, V]) {
	if _, ok := m.young[e.key]; !ok && len(m.young) >= m.half {
		m.old = m.young
		m.young = make(map[K]entry[K, V], m.half)
	}
	delete(m.old, e.key)
	m.young[e.key] = e
}
