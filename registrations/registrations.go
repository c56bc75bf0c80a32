// Package registrations is the application service behind the
// registration of a reserved sale (预约) and of a draw (抽签): shoppers
// register during the registration window, hours before the start; at a
// reserved sale's start only they may buy (the admission script checks
// the set this fills, in the same atomic step as the stock), at a draw's
// start the draw picks among them.
package registrations

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/seckill/seckill"
)

// Store is the truth: one row per registration, and a draw's recorded
// positions (mysql.DB).
type Store interface {
	Register(ctx context.Context, sessionID, userID int64) (created bool, err error)
	// Registration is the row: REGISTERED and since when.
	Registration(ctx context.Context, sessionID, userID int64) (*seckill.Registration, error)
	DrawEntries(ctx context.Context, sessionID int64) ([]seckill.DrawEntry, error)
	HasOrder(ctx context.Context, sessionID, userID int64) (bool, error)
	// The published list of a draw's registrants is read from here.
	seckill.RegistrantPages
}

// Set is the live set admission checks (redis.Gate).
type Set interface {
	Register(ctx context.Context, sessionID, userID int64) error
}

// Desk takes registrations and tells shoppers where they stand.
type Desk struct {
	Store Store
	Set   Set
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// StandingsTTL is how old the copy of a drawn sale's positions that
	// results are answered from may be (DefaultStandingsTTL when zero).
	StandingsTTL time.Duration

	once      sync.Once
	standings *standings
	lists     lists
}

// Register registers a shopper for a sale in its window; created is false
// for a shopper registered already (a retry: nothing changes).
//
// The live set first, then the truth: the shopper hears REGISTERED only
// once both hold it, and a crash between the two leaves a shopper who may
// buy without a row (the purchase makes its order row anyway; a retry
// writes the row), never one told "registered" whom admission refuses.
// The preheat copies the truth into the set, so a set rebuilt after Redis
// lost its data holds every registration that was answered.
func (d *Desk) Register(ctx context.Context, sess *seckill.Session, userID int64) (created bool, err error) {
	if err := sess.CanRegister(d.now()); err != nil {
		return false, err
	}
	// A draw's admission checks drawn rights, not this set: its
	// registrations live in MySQL only, where the draw reads them.
	if sess.AdmitsRegistrants() {
		if err := d.Set.Register(ctx, sess.ID, userID); err != nil {
			return false, err
		}
	}
	return d.Store.Register(ctx, sess.ID, userID)
}

// Status is a shopper's registration for a sale (NOT_FOUND: none): once
// a draw sale is drawn, WON (with the right's end), WAITLISTED (with the
// place in line) or LOST (seckill.DrawStatus), from a copy of the
// positions at most StandingsTTL old.
func (d *Desk) Status(ctx context.Context, sess *seckill.Session, userID int64) (*seckill.Registration, error) {
	r, err := d.Store.Registration(ctx, sess.ID, userID)
	if err != nil || sess.Mode != seckill.ModeDraw || !sess.Drawn() {
		return r, err
	}
	d.once.Do(func() {
		d.standings = &standings{ttl: cmp.Or(d.StandingsTTL, DefaultStandingsTTL), load: d.Store.DrawEntries}
	})
	now := d.now()
	all, err := d.standings.get(ctx, sess.ID, now)
	if err != nil {
		return nil, err
	}
	st, ok := all.byUser[userID]
	if !ok {
		r.Status, _, _ = seckill.DrawStatus(nil, false, 0, now)
		return r, nil
	}
	// Whether the right bought matters only once it has lapsed.
	used := false
	if !st.entry.RightUntil.IsZero() && !now.Before(st.entry.RightUntil) {
		if used, err = d.Store.HasOrder(ctx, sess.ID, userID); err != nil {
			return nil, err
		}
	}
	r.Status, r.RightUntil, r.Position = seckill.DrawStatus(&st.entry, used, st.waiting, now)
	return r, nil
}

func (d *Desk) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}
