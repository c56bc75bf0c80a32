package seckill_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// drawByDefinition is the draw written from its definition alone, an
// HMAC per user and a sort, independent of DrawOrder's code.
func drawByDefinition(seed, digest []byte, users []int64) []int64 {
	rank := func(u int64) []byte {
		m := hmac.New(sha256.New, seed)
		m.Write(digest)
		fmt.Fprintf(m, "%d", u)
		return m.Sum(nil)
	}
	out := slices.Clone(users)
	slices.SortFunc(out, func(a, b int64) int {
		if c := bytes.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		return int(a - b)
	})
	return out
}

// feed hands out the registrants one at a time, each for the item
// itemOf gives.
func feed(users []int64, itemOf func(int64) int64) func() (seckill.Registrant, bool) {
	i := 0
	return func() (seckill.Registrant, bool) {
		if i == len(users) {
			return seckill.Registrant{}, false
		}
		i++
		return seckill.Registrant{UserID: users[i-1], SKUID: itemOf(users[i-1])}, true
	}
}

func oneItem(int64) int64 { return 0 }

func TestDrawTop(t *testing.T) {
	seed := []byte("0123456789abcdef0123456789abcdef")
	users := make([]int64, 5000)
	for i := range users {
		users[i] = int64(i*7 + 1)
	}
	digest := []byte("the registrant list's 32 bytes..")
	want := drawByDefinition(seed, digest, users)
	require.Equal(t, want, seckill.DrawOrder(seed, digest, users))
	for _, k := range []int{0, 1, 10, 4999, 5000, 6000} {
		shuffled := slices.Clone(users)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got := seckill.DrawTop(seed, digest, feed(shuffled, oneItem), map[int64]int{0: k})[0]
		require.Equal(t, want[:min(k, len(want))], got[:min(k, len(got))], "k=%d: the registrants' order does not matter", k)
		require.Len(t, got, min(k, len(users)))
	}
	other := seckill.DrawTop([]byte("another seed"), digest, feed(users, oneItem), map[int64]int{0: 10})[0]
	require.NotEqual(t, want[:10], other, "another seed, another draw")
	other = seckill.DrawTop(seed, []byte("another list"), feed(users, oneItem), map[int64]int{0: 10})[0]
	require.NotEqual(t, want[:10], other, "another list, another draw")
}

// A sale of sizes draws each size among its own registrants: each size's
// order is the sale's one ranking with the other sizes' registrants left
// out, its places its own; a size without places draws nobody.
func TestDrawTopBySize(t *testing.T) {
	seed := []byte("0123456789abcdef0123456789abcdef")
	digest := []byte("the registrant list's 32 bytes..")
	users := make([]int64, 3000)
	for i := range users {
		users[i] = int64(i*5 + 2)
	}
	size := func(u int64) int64 { return 38 + u%3 } // sizes 38, 39, 40
	places := map[int64]int{38: 7, 39: 400, 40: 0}
	got := seckill.DrawTop(seed, digest, feed(users, size), places)
	all := drawByDefinition(seed, digest, users)
	for sku, k := range places {
		want := []int64{}
		for _, u := range all {
			if size(u) == sku && len(want) < k {
				want = append(want, u)
			}
		}
		require.Equal(t, want, got[sku], "size %d", sku)
	}
	require.Empty(t, got[40])
}

// The digest of a registrant list is the SHA-256 of its lines in
// ascending user id order: what sha256sum says of that text file. In a
// sale of sizes a line names its size, so the list fixes who registered
// for which.
func TestRegistrantDigest(t *testing.T) {
	d := seckill.NewRegistrantDigest()
	for _, u := range []int64{3, 17, 1000} {
		d.Add(seckill.Registrant{UserID: u})
	}
	n, digest, err := d.Sum()
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, fmt.Sprintf("%x", sha256.Sum256([]byte("3\n17\n1000\n"))), digest)
	d.Add(seckill.Registrant{UserID: 5})
	_, _, err = d.Sum()
	require.Error(t, err, "out of order: another list's digest")

	sizes := seckill.NewRegistrantDigest()
	sizes.Add(seckill.Registrant{UserID: 3, SKUID: 42})
	sizes.Add(seckill.Registrant{UserID: 17, SKUID: 38})
	_, digest, err = sizes.Sum()
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%x", sha256.Sum256([]byte("3 42\n17 38\n"))), digest)
}

// A sealed seed opens with its key for its session only, and its bytes
// are not the seed's.
func TestDrawKeySealsTheSeed(t *testing.T) {
	_, err := seckill.ParseDrawKey("too short")
	require.ErrorContains(t, err, "SECKILL_DRAW_KEY")
	key, err := seckill.ParseDrawKey(strings.Repeat("ab", 32))
	require.NoError(t, err)
	seed, err := seckill.NewDrawSeed()
	require.NoError(t, err)
	sealed, err := key.Seal(7, seed)
	require.NoError(t, err)
	require.False(t, bytes.Contains(sealed, seed))
	opened, err := key.Open(7, sealed)
	require.NoError(t, err)
	require.Equal(t, seed, opened)
	_, err = key.Open(8, sealed)
	require.Error(t, err, "bound to its session")
	other, err := seckill.ParseDrawKey(strings.Repeat("cd", 32))
	require.NoError(t, err)
	_, err = other.Open(7, sealed)
	require.Error(t, err, "another key")
}

func TestDrawCommitment(t *testing.T) {
	seed, err := seckill.NewDrawSeed()
	require.NoError(t, err)
	require.Len(t, seed, seckill.DrawSeedSize)
	sum := sha256.Sum256(seed)
	require.Equal(t, fmt.Sprintf("%x", sum), seckill.DrawCommitment(seed))
}

// WON only while the right can still buy: a used right is USED, a lapsed
// one LOST; during a pause an open right's end moves on with the pause.
func TestDrawStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	sess := &seckill.Session{RightTTLSeconds: 120}
	live := &seckill.DrawEntry{Position: 1, UserID: 5, RightUntil: now.Add(time.Minute)}
	lapsed := &seckill.DrawEntry{Position: 2, UserID: 6, RightUntil: now.Add(-time.Minute)}
	waiting := &seckill.DrawEntry{Position: 3, UserID: 7}
	for _, c := range []struct {
		e    *seckill.DrawEntry
		used bool
		want seckill.RegistrationStatus
	}{
		{nil, false, seckill.RegistrationLost},
		{live, false, seckill.RegistrationWon},
		{live, true, seckill.RegistrationUsed},
		{lapsed, true, seckill.RegistrationUsed},
		{lapsed, false, seckill.RegistrationLost},
		{waiting, false, seckill.RegistrationWaitlisted},
	} {
		got, until, pos := seckill.DrawStatus(sess, c.e, c.used, 4, now)
		require.Equal(t, c.want, got, "%+v used=%v", c.e, c.used)
		require.Equal(t, got == seckill.RegistrationWon, !until.IsZero(), "an end only for WON")
		if got == seckill.RegistrationWaitlisted {
			require.Equal(t, 4, pos)
		}
	}

	// Paused two minutes ago: the right granted a minute before the
	// pause (ending a minute after it) has its minute left; the one that
	// lapsed before the pause stays lapsed; one granted during the pause
	// (by the draw) has its whole ttl left.
	paused := &seckill.Session{RightTTLSeconds: 120, Paused: true, PausedAt: now.Add(-2 * time.Minute)}
	open := &seckill.DrawEntry{UserID: 8, RightUntil: now.Add(-time.Minute)}
	st, until, _ := seckill.DrawStatus(paused, open, false, 0, now)
	require.Equal(t, seckill.RegistrationWon, st)
	require.Equal(t, now.Add(time.Minute), until)
	before := &seckill.DrawEntry{UserID: 9, RightUntil: now.Add(-3 * time.Minute)}
	st, _, _ = seckill.DrawStatus(paused, before, false, 0, now)
	require.Equal(t, seckill.RegistrationLost, st)
	during := &seckill.DrawEntry{UserID: 10, RightUntil: now.Add(-time.Minute).Add(2 * time.Minute)}
	st, until, _ = seckill.DrawStatus(paused, during, false, 0, now)
	require.Equal(t, seckill.RegistrationWon, st)
	require.Equal(t, now.Add(2*time.Minute), until, "granted a minute into the pause: its whole ttl from now")
}

func TestDrawModeValidates(t *testing.T) {
	start := time.Now().Add(time.Hour)
	s := seckill.Session{SKUID: 1, Title: "t", PriceCents: 1, TotalStock: 1, PerUserLimit: 1, StartAt: start, EndAt: start.Add(time.Hour),
		Mode: seckill.ModeDraw, RegisterFrom: start.Add(-time.Hour), RegisterUntil: start, RightTTLSeconds: 600}
	require.NoError(t, s.Validate())
	require.True(t, s.Registers())
	s.RegisterUntil = start.Add(time.Second)
	require.Error(t, s.Validate(), "the window closes no later than the start")
	s.RegisterUntil, s.RightTTLSeconds = start, 0
	require.Error(t, s.Validate(), "a draw needs a right's ttl")
	s.RightTTLSeconds, s.PerUserLimit = 600, 2
	require.Equal(t, seckill.EINVALID, seckill.ErrorCode(s.Validate()), "a draw's right buys one unit")
	s.PerUserLimit = 1
	s.Mode = seckill.ModeReserved
	s.RightTTLSeconds = 5
	require.Error(t, s.Validate(), "only a draw has one")
}

// BenchmarkDrawTop draws the 2,000 places of a 1,000-unit sale among a
// million registrants: the time and allocations of the draw itself
// (docs/API.md keeps the figures).
func BenchmarkDrawTop(b *testing.B) {
	seed := []byte("0123456789abcdef0123456789abcdef")
	const registrants, places = 1_000_000, 2_000
	b.ReportAllocs()
	for b.Loop() {
		u := int64(0)
		next := func() (seckill.Registrant, bool) { u++; return seckill.Registrant{UserID: u}, u <= registrants }
		got := seckill.DrawTop(seed, seed, next, map[int64]int{0: places})
		if len(got[0]) != places {
			b.Fatal(len(got[0]))
		}
	}
}

// A registration names its item as recorded: required and one the sale
// sells in a sale of sizes; in a single-SKU sale optional, and recorded
// as 0 whether named or not.
func TestRegistrationItem(t *testing.T) {
	one := &seckill.Session{ID: 1, SKUID: 7, TotalStock: 1}
	sizes := &seckill.Session{ID: 2}
	sizes.SetItems([]seckill.Item{{SKUID: 38, TotalStock: 1}, {SKUID: 39, TotalStock: 1}})
	for _, c := range []struct {
		s    *seckill.Session
		sku  int64
		want int64
		err  string
	}{
		{one, 0, 0, ""}, {one, 7, 0, ""}, {one, 8, 0, "no item with sku_id 8"},
		{sizes, 0, 0, "sku_id is required"}, {sizes, 39, 39, ""}, {sizes, 77, 0, "no item with sku_id 77"},
	} {
		got, err := c.s.RegistrationItem(c.sku)
		if c.err != "" {
			require.Equal(t, seckill.EINVALID, seckill.ErrorCode(err))
			require.ErrorContains(t, err, c.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.want, got, "session %d sku %d", c.s.ID, c.sku)
	}
}
