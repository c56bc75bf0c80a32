package api

import (
	"sync"
	"time"
)

// expiring is a map whose entries expire and whose size has a hard bound,
// for state keyed by what a client chooses (ids it made up, its address):
// a flood of distinct keys must cost bounded memory, never a map that only
// grows. Entries live in two generations of at most half the bound each;
// when the young one is full it becomes the old one and the old one is
// dropped whole, so an insert costs O(1) with no scan and no per-entry list.
// A hit in the old generation moves the entry to the young one, so keys in
// use survive the turnover and a flood evicts only keys that were idle.
// Expired entries are ignored on lookup and go with their generation.
type expiring[K comparable, V any] struct {
	half int

	mu    sync.Mutex
	young map[K]expiringEntry[V]
	old   map[K]expiringEntry[V]
}

type expiringEntry[V any] struct {
	v       V
	expires time.Time
}

// newExpiring returns a map that holds at most max entries (at least 2).
func newExpiring[K comparable, V any](max int) *expiring[K, V] {
	half := max / 2
	if half < 1 {
		half = 1
	}
	return &expiring[K, V]{half: half, young: make(map[K]expiringEntry[V]), old: make(map[K]expiringEntry[V])}
}

// get returns the value of k if it is there and not expired at now.
func (m *expiring[K, V]) get(k K, now time.Time) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.lookup(k, now); ok {
		return e.v, true
	}
	var zero V
	return zero, false
}

// getOrPut returns the value of k, storing mk()'s first if k is absent or
// expired; either way k then lives until now+ttl.
func (m *expiring[K, V]) getOrPut(k K, now time.Time, ttl time.Duration, mk func() V) V {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.lookup(k, now)
	if !ok {
		e.v = mk()
	}
	m.store(k, expiringEntry[V]{v: e.v, expires: now.Add(ttl)})
	return e.v
}

// put stores v for k until expires.
func (m *expiring[K, V]) put(k K, v V, expires time.Time) {
	m.mu.Lock()
	m.store(k, expiringEntry[V]{v: v, expires: expires})
	m.mu.Unlock()
}

// remove drops k.
func (m *expiring[K, V]) remove(k K) {
	m.mu.Lock()
	delete(m.young, k)
	delete(m.old, k)
	m.mu.Unlock()
}

// len is the number of entries held, expired ones included: the memory cost.
func (m *expiring[K, V]) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.young) + len(m.old)
}

// lookup finds k (m.mu held), promoting it from the old generation.
func (m *expiring[K, V]) lookup(k K, now time.Time) (expiringEntry[V], bool) {
	if e, ok := m.young[k]; ok {
		return e, now.Before(e.expires)
	}
	e, ok := m.old[k]
	if !ok || !now.Before(e.expires) {
		return expiringEntry[V]{}, false
	}
	delete(m.old, k)
	m.store(k, e)
	return e, true
}

// store puts e under k (m.mu held), turning the generations over first
// when the young one is full.
func (m *expiring[K, V]) store(k K, e expiringEntry[V]) {
	if _, ok := m.young[k]; !ok && len(m.young) >= m.half {
		m.old = m.young
		m.young = make(map[K]expiringEntry[V], m.half)
	}
	delete(m.old, k)
	m.young[k] = e
}
