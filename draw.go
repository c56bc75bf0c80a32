package seckill

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
	"time"
)

// A draw (ModeDraw) orders a sale's registrants by a pure function of a
// seed and the registrant list, so that anyone given both can recompute
// it (seckill draw verify):
//
//	digest = SHA-256 of the registrant ids in ascending order, each in
//	         decimal followed by "\n" (the list as a text file)
//	rank(user) = HMAC-SHA256(seed, digest's 32 bytes || user id in decimal)
//
// ascending bytes, ties (never seen in practice) by user id. The seed is
// drawn with crypto/rand by the worker, which alone holds the key that
// seals it at rest (DrawKey), so reading MySQL or a backup tells nobody
// the seed before the draw; its SHA-256, the commitment, is published
// before registration opens. The list is fixed when registration closes
// (by the database's clock) and its count and digest published then, so
// the ranking depends on a seed chosen before the list was known and on
// the whole list: whoever learnt the seed early still could not rank a
// candidate id without knowing every other registration.
//
// Each item of the sale is drawn on its own, among the registrants who
// named it (a single-SKU sale is one item): its registrants in the
// ranking's order, of which the draw records 2 × the item's stock at the
// draw. The first stock of them hold a right to buy the item at the
// start, the rest are its waitlist, which a lapsed right passes to, in
// order. Every other registrant has lost: a waitlist longer than the
// stock would rarely move and costs rows per registrant. The ranking is
// the sale's one ranking, so an item's order is the sale's order with
// the other items' registrants left out.

// DefaultRightTTL is how long a drawn right lasts when the sale does not
// say (right_ttl_seconds).
const DefaultRightTTL = 600 * time.Second

// MaxRightTTLSeconds bounds right_ttl_seconds: a right is meant to be used
// within the sale, not to hold a unit for days.
const MaxRightTTLSeconds = 7 * 24 * 3600

// DrawSeedSize is the length of a draw seed in bytes.
const DrawSeedSize = 32

// RightTTL is how long a drawn right lasts.
func (s *Session) RightTTL() time.Duration { return time.Duration(s.RightTTLSeconds) * time.Second }

// DrawMargin is how long after register_until a draw's registrant list
// is fixed and published, and the earliest its draw runs: the clocks of
// the session's workflow and of the database may differ a little, and the
// database's decides (a registration is refused from register_until on by
// its clock).
const DrawMargin = 2 * time.Second

// DrawAt is when the draw runs: at the start, and never before the
// registrant list is fixed.
func (s *Session) DrawAt() time.Time { return later(s.StartAt, s.RegisterUntil.Add(DrawMargin)) }

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// DrawPool is one item's draw: the item (its SKU in a sale of several,
// 0 for a single-SKU sale's one item, as registrations name it) and its
// stock at the draw (recorded with it) or, before, today's. Places is
// how many positions its draw records: the winners and a waitlist as
// long.
type DrawPool struct {
	SKUID int64
	Stock int
}

// Places is how many positions the pool's draw records.
func (p DrawPool) Places() int { return 2 * p.Stock }

// DrawPools are the sale's draws, one per item, in the items' order.
func (s *Session) DrawPools() []DrawPool {
	if !s.Several() {
		return []DrawPool{{Stock: stockAtDraw(s.DrawnStock, s.TotalStock)}}
	}
	pools := make([]DrawPool, len(s.Items))
	for i, it := range s.Items {
		pools[i] = DrawPool{SKUID: it.SKUID, Stock: stockAtDraw(it.DrawnStock, it.TotalStock)}
	}
	return pools
}

// stockAtDraw is the recorded stock, or today's before it is recorded.
func stockAtDraw(drawn, total int) int {
	if drawn > 0 {
		return drawn
	}
	return total
}

// Drawn reports whether the sale's draw has been made (its seed published).
func (s *Session) Drawn() bool { return !s.DrawnAt.IsZero() }

// RegistrantDigest hashes a registrant list as published: the lines of
// the registrants in ascending user id order (Add refuses any other),
// each the user id in decimal and, in a sale of several items, a space
// and the item's SKU (Registrant.appendLine), then "\n". The digest of a
// list is so the SHA-256 of its text file, which anyone holding the list
// can recompute with sha256sum; it fixes who registered for which item.
type RegistrantDigest struct {
	h     hash.Hash
	n     int
	last  int64
	line  []byte
	order bool
}

// NewRegistrantDigest starts the digest of an empty list.
func NewRegistrantDigest() *RegistrantDigest {
	return &RegistrantDigest{h: sha256.New(), line: make([]byte, 0, 41), order: true}
}

// Add adds the next registrant, who must come after the last one.
func (d *RegistrantDigest) Add(r Registrant) {
	if d.n > 0 && r.UserID <= d.last {
		d.order = false
	}
	d.n, d.last = d.n+1, r.UserID
	d.line = r.appendLine(d.line[:0])
	d.h.Write(d.line)
}

// Sum is the count and the digest (hex) of the list added; an error when
// the ids did not come in ascending order (the digest would be another
// list's).
func (d *RegistrantDigest) Sum() (int, string, error) {
	if !d.order {
		return 0, "", Errorf(EINVALID, "registrants must be digested in ascending id order")
	}
	return d.n, hex.EncodeToString(d.h.Sum(nil)), nil
}

// DrawEntry is one recorded position of an item's draw (1-based, per
// item: SKUID as registrations name it, 0 in a single-SKU sale).
// RightUntil is the end of the right granted to it, zero while it waits.
type DrawEntry struct {
	SKUID      int64     `json:"sku_id,omitempty"`
	Position   int       `json:"position"`
	UserID     int64     `json:"user_id"`
	RightUntil time.Time `json:"right_until,omitzero"`
}

// DrawStatus is a drawn registrant's status in sale s at now: no entry
// (nil) has lost; an entry without a right waits at waiting (its place
// among the entries still without one); a right that bought (used) is
// USED; a right that can still buy is WON, with its end (RightEnd); a
// right that lapsed unused has lost too, its unit passed on (admission
// refuses the shopper, and WON would promise what the sale no longer
// gives).
func DrawStatus(s *Session, e *DrawEntry, used bool, waiting int, now time.Time) (RegistrationStatus, time.Time, int) {
	switch {
	case e == nil:
		return RegistrationLost, time.Time{}, 0
	case e.RightUntil.IsZero():
		return RegistrationWaitlisted, time.Time{}, waiting
	case used:
		return RegistrationUsed, time.Time{}, 0
	}
	if end := s.RightEnd(e.RightUntil, now); now.Before(end) {
		return RegistrationWon, end, 0
	}
	return RegistrationLost, time.Time{}, 0
}

// RightEnd is when a right recorded to end at until ends as things stand
// at now. Nobody can buy while the sale is paused, so a right's time does
// not run then: a right open when the pause began gains the time paused
// since the later of the pause and its grant (until − ttl). The resume
// writes that extension into the rights (mysql.DB.ChangeSession, the same
// rule); before it, this is what a shopper is told.
func (s *Session) RightEnd(until, now time.Time) time.Time {
	if s.PausedAt.IsZero() || !until.After(s.PausedAt) {
		return until
	}
	from := until.Add(-s.RightTTL())
	if from.Before(s.PausedAt) {
		from = s.PausedAt
	}
	return until.Add(max(0, now.Sub(from)))
}

// DrawRegistrants draws the places of each of a sale's pools among its
// registrants, read from the truth page by page (memory O(places + a
// page)), ranked with the list's published digest: pool SKU → the users
// in order. It digests what it read too, and refuses to draw a list
// other than the one published (a row added or removed under the cutoff
// since): a draw retried over a changed list would write another order
// over the positions of the first.
func DrawRegistrants(ctx context.Context, from RegistrantPages, s *Session, seed []byte, pools []DrawPool) (map[int64][]int64, error) {
	published, err := hex.DecodeString(s.RegistrantsDigest)
	if err != nil || len(published) != sha256.Size {
		return nil, Errorf(ECONFLICT, "session %d: its registrant list is not published", s.ID)
	}
	places := make(map[int64]int, len(pools))
	for _, p := range pools {
		places[p.SKUID] = p.Places()
	}
	var (
		page  []Registrant
		i     int
		after int64
		sum   = NewRegistrantDigest()
	)
	next := func() (Registrant, bool) {
		if i == len(page) {
			if page, err = from.Registrants(ctx, s.ID, after, registrantPage); err != nil || len(page) == 0 {
				return Registrant{}, false
			}
			i, after = 0, page[len(page)-1].UserID
		}
		i++
		sum.Add(page[i-1])
		return page[i-1], true
	}
	top := DrawTop(seed, published, next, places)
	if err != nil {
		return nil, err
	}
	return top, s.sameRegistrants(sum)
}

// sameRegistrants checks a list digested now against the one published.
func (s *Session) sameRegistrants(d *RegistrantDigest) error {
	n, digest, err := d.Sum()
	switch {
	case err != nil:
		return err
	case s.RegistrantsCount == nil || n != *s.RegistrantsCount || digest != s.RegistrantsDigest:
		return Errorf(ECONFLICT, "session %d: the registrants read now (%d, digest %s) are not the list published when registration closed (%d, digest %s)",
			s.ID, n, digest, deref(s.RegistrantsCount), s.RegistrantsDigest)
	}
	return nil
}

func deref(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}

// VerifyDraw checks a drawn sale from what it published: the seed's
// SHA-256 is the commitment, the registrants (ascending ids, those
// registered before register_until) are the list whose count and digest
// were published when registration closed, and each item's recorded
// entries are the first Places (of its stock at the draw) of its draw
// recomputed from the seed and that list (DrawOrder over the item's
// registrants: the definition, not the streaming code that drew it). It
// returns how many entries matched and an error naming the first
// discrepancy. entries come in (item, position) order, as recorded.
func VerifyDraw(s *Session, registrants []Registrant, entries []DrawEntry) (int, error) {
	if !s.Drawn() || s.DrawSeed == "" {
		return 0, Errorf(ECONFLICT, "session %d is not drawn yet: its seed is published at the draw, at the start", s.ID)
	}
	seed, err := hex.DecodeString(s.DrawSeed)
	if err != nil {
		return 0, Errorf(EINVALID, "session %d: the published seed is not hex: %v", s.ID, err)
	}
	if got := DrawCommitment(seed); got != s.DrawCommitment {
		return 0, Errorf(ECONFLICT, "session %d: SHA-256 of the seed is %s, the commitment published is %s", s.ID, got, s.DrawCommitment)
	}
	d := NewRegistrantDigest()
	byItem := map[int64][]int64{}
	for _, r := range registrants {
		d.Add(r)
		byItem[r.SKUID] = append(byItem[r.SKUID], r.UserID)
	}
	if err := s.sameRegistrants(d); err != nil {
		return 0, err
	}
	digest, _ := hex.DecodeString(s.RegistrantsDigest)
	recorded := map[int64][]DrawEntry{}
	for _, e := range entries {
		recorded[e.SKUID] = append(recorded[e.SKUID], e)
	}
	matched := 0
	for _, p := range s.DrawPools() {
		want := DrawOrder(seed, digest, byItem[p.SKUID])
		want = want[:min(len(want), p.Places())]
		got := recorded[p.SKUID]
		delete(recorded, p.SKUID)
		for i, e := range got {
			switch {
			case i >= len(want):
				return matched, Errorf(ECONFLICT, "session %d%s: %d entries recorded, the draw has %d", s.ID, p.name(), len(got), len(want))
			case e.Position != i+1:
				return matched, Errorf(ECONFLICT, "session %d%s: entry %d holds position %d", s.ID, p.name(), i+1, e.Position)
			case e.UserID != want[i]:
				return matched, Errorf(ECONFLICT, "session %d%s: position %d records user %d, the draw gives user %d", s.ID, p.name(), i+1, e.UserID, want[i])
			}
			matched++
		}
		if len(got) != len(want) {
			return matched, Errorf(ECONFLICT, "session %d%s: %d entries recorded, the draw has %d", s.ID, p.name(), len(got), len(want))
		}
	}
	for sku, got := range recorded {
		return matched, Errorf(ECONFLICT, "session %d: %d entries recorded for sku %d, which the sale does not sell", s.ID, len(got), sku)
	}
	return matched, nil
}

// name is how an error names the pool: nothing for a single-SKU sale's.
func (p DrawPool) name() string {
	if p.SKUID == 0 {
		return ""
	}
	return ", item " + strconv.FormatInt(p.SKUID, 10)
}

// RightsSource lists a drawn sale's usable rights (mysql.DB): granted,
// not lapsed at now, their holder without an order in the sale.
type RightsSource interface {
	UsableRights(ctx context.Context, sessionID int64, now time.Time) ([]DrawEntry, error)
}

// RightsSink is the rights hash admission checks (redis.Gate).
type RightsSink interface {
	LoadRights(ctx context.Context, sessionID int64, entries []DrawEntry) error
}

// CopyRights writes a drawn sale's usable rights from the truth into the
// hash admission checks, and returns how many: what a rebuild after Redis
// lost its data needs (a used right, whose holder has an order, is not
// copied, so it cannot buy again). Nothing for a sale not drawn.
func CopyRights(ctx context.Context, from RightsSource, to RightsSink, s *Session, now time.Time) (int, error) {
	if s.Mode != ModeDraw || !s.Drawn() {
		return 0, nil
	}
	rights, err := from.UsableRights(ctx, s.ID, now)
	if err != nil {
		return 0, err
	}
	return len(rights), to.LoadRights(ctx, s.ID, rights)
}
