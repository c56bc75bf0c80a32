package seckill

import (
	"bytes"
	"container/heap"
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"slices"
	"strconv"
)

// The draw's ranking (see draw.go): rank(user) = HMAC-SHA256(seed,
// digest || user id in decimal), ascending, ties by user id; each item's
// first places kept in a bounded heap while the registrants stream by.

// ranked is a registrant with its rank.
type ranked struct {
	rank [sha256.Size]byte
	user int64
}

// ranker computes ranks with one HMAC state reused (Reset), so a million
// registrants cost no allocation each. buf holds the digest, then the
// user id.
type ranker struct {
	mac      hash.Hash
	buf, sum []byte
	digest   int
}

func newRanker(seed, digest []byte) *ranker {
	buf := append(make([]byte, 0, len(digest)+20), digest...)
	return &ranker{mac: hmac.New(sha256.New, seed), buf: buf, sum: make([]byte, 0, sha256.Size), digest: len(digest)}
}

func (r *ranker) rank(user int64) ranked {
	r.mac.Reset()
	r.buf = strconv.AppendInt(r.buf[:r.digest], user, 10)
	r.mac.Write(r.buf)
	// Into the ranker's own buffer: a slice of a local would escape
	// through the interface call, an allocation per registrant.
	r.sum = r.mac.Sum(r.sum[:0])
	out := ranked{user: user}
	copy(out.rank[:], r.sum)
	return out
}

// before is the draw's order: ascending rank, then user id.
func (a *ranked) before(b *ranked) bool {
	if c := bytes.Compare(a.rank[:], b.rank[:]); c != 0 {
		return c < 0
	}
	return a.user < b.user
}

// worstFirst is a max-heap of the best k seen so far: its root is the
// one to drop when a better registrant comes.
type worstFirst []ranked

func (h worstFirst) Len() int           { return len(h) }
func (h worstFirst) Less(i, j int) bool { return h[j].before(&h[i]) }
func (h worstFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *worstFirst) Push(x any)        { *h = append(*h, x.(ranked)) }
func (h *worstFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// DrawTop returns the first places[sku] registrants of each item's draw
// in order, reading the registrants one at a time from next (false: no
// more). Memory is O(places) whatever the number of registrants: the
// draw of a sale of a thousand units among millions holds two thousand
// ranks. A registrant of an item without places is not drawn. The
// registrant order does not matter; a registrant given twice is counted
// once only if next never repeats it (the caller reads a primary key).
func DrawTop(seed, digest []byte, next func() (Registrant, bool), places map[int64]int) map[int64][]int64 {
	type pool struct {
		k    int
		best worstFirst
	}
	r := newRanker(seed, digest)
	pools := make(map[int64]*pool, len(places))
	for sku, k := range places {
		pools[sku] = &pool{k: k, best: make(worstFirst, 0, max(k, 0))}
	}
	for {
		reg, ok := next()
		if !ok {
			break
		}
		p := pools[reg.SKUID]
		if p == nil || p.k <= 0 {
			continue
		}
		c := r.rank(reg.UserID)
		switch {
		case len(p.best) < p.k:
			heap.Push(&p.best, c)
		case c.before(&p.best[0]):
			p.best[0] = c
			heap.Fix(&p.best, 0)
		}
	}
	out := make(map[int64][]int64, len(pools))
	for sku, p := range pools {
		out[sku] = inOrder(p.best)
	}
	return out
}

// DrawOrder is the whole draw of users, a plain sort: what DrawTop
// computes, by the definition, for tests and verification.
func DrawOrder(seed, digest []byte, users []int64) []int64 {
	r := newRanker(seed, digest)
	all := make([]ranked, len(users))
	for i, u := range users {
		all[i] = r.rank(u)
	}
	return inOrder(all)
}

// inOrder sorts rs into the draw's order and returns their users.
func inOrder(rs []ranked) []int64 {
	slices.SortFunc(rs, func(a, b ranked) int {
		if a.before(&b) {
			return -1
		}
		return 1
	})
	out := make([]int64, len(rs))
	for i, c := range rs {
		out[i] = c.user
	}
	return out
}
