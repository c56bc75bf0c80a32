// Package registrations is the application service behind the
// registration of a reserved sale (预约) and of a draw (抽签): shoppers
// register during the registration window, hours before the start; at a
// reserved sale's start only they may buy (the admission script checks
// the set this fills, in the same atomic step as the stock), at a draw's
// start the draw picks among them.
package registrations

import (
	"context"
	"sync"
	"time"

	"github.com/seckill/seckill"
)

// Store is the truth: one row per registration, and a draw's recorded
// positions (mysql.DB).
type Store interface {
	Register(ctx context.Context, sessionID, userID, skuID int64) (created bool, err error)
	// Registration is the row: REGISTERED, for which item and since when.
	Registration(ctx context.Context, sessionID, userID int64) (*seckill.Registration, error)
	DrawEntries(ctx context.Context, sessionID int64) ([]seckill.DrawEntry, error)
	HasOrder(ctx context.Context, sessionID, userID int64) (bool, error)
	// The published list of a draw's registrants is read from here.
	seckill.RegistrantPages
}

// Set is what admission checks in Redis (redis.Gate): a reserved sale's
// registrant set, and a draw's rights hash (Right: the user's field for
// the item, "" when absent).
type Set interface {
	Register(ctx context.Context, sessionID, userID, skuID int64) error
	Right(ctx context.Context, sessionID, userID, skuID int64) (string, error)
}

// Desk takes registrations and tells shoppers where they stand.
type Desk struct {
	Store Store
	Set   Set
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	once      sync.Once
	standings *standings
	lists     lists
}

// Register registers a shopper for a sale in its window, for the item
// skuID (required in a sale of several items: a registration is for one
// size, and buys that one); created is false for a shopper registered
// already (a retry: nothing changes, and a second registration for
// another item is not one: the first stands).
//
// The live set first, then the truth: the shopper hears REGISTERED only
// once both hold it, and a crash between the two leaves a shopper who may
// buy without a row (the purchase makes its order row anyway; a retry
// writes the row), never one told "registered" whom admission refuses.
// The preheat copies the truth into the set, so a set rebuilt after Redis
// lost its data holds every registration that was answered.
func (d *Desk) Register(ctx context.Context, sess *seckill.Session, userID, skuID int64) (created bool, err error) {
	sku, err := sess.RegistrationItem(skuID)
	if err != nil {
		return false, err
	}
	if err := sess.CanRegister(d.now()); err != nil {
		return false, err
	}
	// A draw's admission checks drawn rights, not this set: its
	// registrations live in MySQL only, where the draw reads them.
	if sess.AdmitsRegistrants() {
		// Not into the set for a second item (two racing registrations
		// for two items can both pass: the sale-wide limit still holds,
		// and a rebuild copies only the row that stood).
		if err := d.sameItem(ctx, sess, userID, sku); err != nil {
			return false, err
		}
		if err := d.Set.Register(ctx, sess.ID, userID, sku); err != nil {
			return false, err
		}
	}
	created, err = d.Store.Register(ctx, sess.ID, userID, sku)
	if err != nil || created {
		return created, err
	}
	return false, d.sameItem(ctx, sess, userID, sku)
}

// sameItem refuses a registration for another item than the shopper's
// registration (CONFLICT): one registration per shopper per sale, the
// first stands. A single-SKU sale's registrations all name its one item:
// nothing to read.
func (d *Desk) sameItem(ctx context.Context, sess *seckill.Session, userID, sku int64) error {
	if !sess.Several() {
		return nil
	}
	r, err := d.Store.Registration(ctx, sess.ID, userID)
	switch {
	case seckill.ErrorCode(err) == seckill.ENOTFOUND:
		return nil
	case err != nil:
		return err
	case r.SKUID != sku:
		return seckill.Errorf(seckill.ECONFLICT, "user %d is registered for sku_id %d in session %d: one registration per shopper per sale",
			userID, r.SKUID, sess.ID)
	}
	return nil
}

// Status is a shopper's registration for a sale (NOT_FOUND: none): once
// a draw sale is drawn, WON (with the right's end), USED, WAITLISTED
// (with the place in line) or LOST (seckill.DrawStatus), from a copy of
// the positions reread when the sale's rights_version moves.
func (d *Desk) Status(ctx context.Context, sess *seckill.Session, userID int64) (*seckill.Registration, error) {
	r, err := d.Store.Registration(ctx, sess.ID, userID)
	if err != nil || sess.Mode != seckill.ModeDraw || !sess.Drawn() {
		return r, err
	}
	d.once.Do(func() { d.standings = &standings{load: d.Store.DrawEntries} })
	now := d.now()
	all, err := d.standings.get(ctx, sess.ID, sess.RightsVersion, now)
	if err != nil {
		return nil, err
	}
	st, ok := all.byUser[userID]
	if !ok {
		r.Status, _, _ = seckill.DrawStatus(sess, nil, false, 0, now)
		return r, nil
	}
	used := false
	if !st.entry.RightUntil.IsZero() {
		if used, err = d.used(ctx, sess.ID, userID, r.SKUID); err != nil {
			return nil, err
		}
	}
	r.Status, r.RightUntil, r.Position = seckill.DrawStatus(sess, &st.entry, used, st.waiting, now)
	return r, nil
}

// used is whether a granted right has bought: admission marks it used in
// Redis in the step that wins with it, before any order row exists. A
// right Redis does not hold (not loaded yet, or dropped by a rebuild,
// which copies only unused rights) has bought if its holder has an order.
func (d *Desk) used(ctx context.Context, sessionID, userID, skuID int64) (bool, error) {
	v, err := d.Set.Right(ctx, sessionID, userID, skuID)
	if err != nil || v != "" {
		return v == "u", err
	}
	return d.Store.HasOrder(ctx, sessionID, userID)
}

func (d *Desk) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}
