// Package registrations is the application service behind the
// registration of a reserved sale (预约) and of a draw (抽签): shoppers
// register during the registration window, hours before the start; at a
// reserved sale's start only they may buy (the admission script checks
// the set this fills, in the same atomic step as the stock), at a draw's
// start the draw picks among them.
package registrations

import (
	"context"
	"time"

	"github.com/seckill/seckill"
)

// Store is the truth: one row per registration (mysql.DB).
type Store interface {
	Register(ctx context.Context, sessionID, userID int64) (created bool, err error)
	Registration(ctx context.Context, sessionID, userID int64) (*seckill.Registration, error)
}

// Set is the live set admission checks (redis.Gate).
type Set interface {
	Register(ctx context.Context, sessionID, userID int64) error
}

// Desk takes registrations.
type Desk struct {
	Store Store
	Set   Set
	// Now is the clock (time.Now when nil).
	Now func() time.Time
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

// Status is a shopper's registration for a sale (NOT_FOUND: none).
func (d *Desk) Status(ctx context.Context, sessionID, userID int64) (*seckill.Registration, error) {
	return d.Store.Registration(ctx, sessionID, userID)
}

func (d *Desk) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}
