package seckill

import (
	"context"
	"strconv"
	"time"
)

// SessionMode is who may buy in a sale.
type SessionMode string

const (
	// ModeFirstCome: every shopper, the fastest first (the default).
	ModeFirstCome SessionMode = "first_come"
	// ModeReserved (预约): only the shoppers who registered during the
	// registration window, hours before the start, may buy; first come
	// among them. The stampede's checks (blocklist, ticket, risk) run at
	// registration, where seconds are cheap, and the start meets only
	// registrants.
	ModeReserved SessionMode = "reserved"
	// ModeDraw (抽签): shoppers register in the window as for a reserved
	// sale; at the start the session's workflow draws an order among them
	// from a seed committed at creation (draw.go), and only the holders of
	// a live right may buy.
	ModeDraw SessionMode = "draw"
)

// MaxRegistrationWindow bounds how long before its start a sale may take
// registrations.
const MaxRegistrationWindow = 90 * 24 * time.Hour

// Registers reports whether the sale takes registrations.
func (s *Session) Registers() bool { return s.Mode == ModeReserved || s.Mode == ModeDraw }

// AdmitsRegistrants reports whether admission checks the registrant set:
// a reserved sale's. A draw's admission checks the drawn rights instead,
// so its registrants need not be copied into Redis nor compared there.
func (s *Session) AdmitsRegistrants() bool { return s.Mode == ModeReserved }

// validateMode checks the mode and, for a sale that registers, its
// window: it closes no later than the start (a registration after it
// would let anyone who can register buy at once, the stampede the mode
// exists to avoid).
func (s *Session) validateMode() error {
	switch s.Mode {
	case "", ModeFirstCome:
		if !s.RegisterFrom.IsZero() || !s.RegisterUntil.IsZero() {
			return Errorf(EINVALID, "register_from and register_until need mode reserved or draw")
		}
		if s.RightTTLSeconds != 0 {
			return Errorf(EINVALID, "right_ttl_seconds needs mode draw")
		}
		return nil
	case ModeReserved:
		if s.RightTTLSeconds != 0 {
			return Errorf(EINVALID, "right_ttl_seconds needs mode draw")
		}
	case ModeDraw:
		if s.RightTTLSeconds <= 0 || s.RightTTLSeconds > MaxRightTTLSeconds {
			return Errorf(EINVALID, "right_ttl_seconds must be between 1 and %d", MaxRightTTLSeconds)
		}
		if s.PerUserLimit != 1 {
			return Errorf(EINVALID, "a draw's right buys one unit: per_user_limit must be 1, not %d", s.PerUserLimit)
		}
	default:
		return Errorf(EINVALID, "mode must be first_come, reserved or draw, not %q", s.Mode)
	}
	switch {
	case s.RegisterFrom.IsZero() || s.RegisterUntil.IsZero():
		return Errorf(EINVALID, "a %s sale needs register_from and register_until", s.Mode)
	case !s.RegisterUntil.After(s.RegisterFrom):
		return Errorf(EINVALID, "register_until must be after register_from")
	case s.RegisterUntil.After(s.StartAt):
		return Errorf(EINVALID, "register_until must be no later than start_at: registration closes before the sale opens")
	case s.StartAt.Sub(s.RegisterFrom) > MaxRegistrationWindow:
		return Errorf(EINVALID, "register_from must be within %d days of start_at", int(MaxRegistrationWindow.Hours()/24))
	}
	return nil
}

// CanRegister says why a shopper may not register now: the sale takes no
// registrations, or its window is not open (CONFLICT, as the API answers
// 409 for a registration out of its window).
func (s *Session) CanRegister(now time.Time) error {
	switch {
	case !s.Registers():
		return Errorf(ECONFLICT, "session %d is first come, first served: it takes no registrations", s.ID)
	case now.Before(s.RegisterFrom):
		return Errorf(ECONFLICT, "registration for session %d opens at %s", s.ID, s.RegisterFrom.UTC().Format(time.RFC3339))
	case !now.Before(s.RegisterUntil):
		return Errorf(ECONFLICT, "registration for session %d closed at %s", s.ID, s.RegisterUntil.UTC().Format(time.RFC3339))
	case s.Mode == ModeDraw && s.DrawCommitment == "":
		// Nobody registers for a draw before its seed is committed: the
		// worker seals one moments after the sale is created.
		return Errorf(ECONFLICT, "session %d: the draw's commitment is not published yet; registration opens once it is", s.ID)
	}
	return nil
}

// RegistrationClosed is the answer to a registration the database refused
// because its own clock says the window is not open: the clock that
// decides (the API host's may be a little off).
func RegistrationClosed(sessionID int64) error {
	return Errorf(ECONFLICT, "registration for session %d is not open by the database's clock", sessionID)
}

// RegistrationStatus is where a shopper's registration stands.
type RegistrationStatus string

const (
	// RegistrationRegistered: registered; in a reserved sale, eligible to
	// buy; in a draw, not drawn yet.
	RegistrationRegistered RegistrationStatus = "REGISTERED"
	// RegistrationWon: drawn, holding a right that can still buy (until
	// RightUntil).
	RegistrationWon RegistrationStatus = "WON"
	// RegistrationUsed: drawn, and the right bought (the shopper's order
	// tells the rest: paid, or closed unpaid and its unit passed on).
	RegistrationUsed RegistrationStatus = "USED"
	// RegistrationWaitlisted: drawn into the waitlist, at Position among
	// those still waiting; a right comes when one before it lapses.
	RegistrationWaitlisted RegistrationStatus = "WAITLISTED"
	// RegistrationLost: not drawn, or a right that lapsed unused (its unit
	// went to the next in the drawn order).
	RegistrationLost RegistrationStatus = "LOST"
)

// Registration is a shopper's registration for a sale: one per shopper
// per sale, for one item of a sale of several (SKUID; 0 in a single-SKU
// sale).
type Registration struct {
	SessionID int64              `json:"session_id"`
	UserID    int64              `json:"user_id"`
	SKUID     int64              `json:"sku_id,omitempty"`
	Status    RegistrationStatus `json:"status"`
	At        time.Time          `json:"registered_at"`
	// RightUntil is a WON shopper's right's end; Position a WAITLISTED
	// shopper's place among those waiting (1 is next).
	RightUntil time.Time `json:"right_until,omitzero"`
	Position   int       `json:"position,omitempty"`
}

// RegistrationItem is the item a registration names, as it is recorded:
// skuID in a sale of several items (required there), 0 in a single-SKU
// sale (whose one item may be named or not).
func (s *Session) RegistrationItem(skuID int64) (int64, error) {
	it, err := s.Item(skuID)
	if err != nil || !s.Several() {
		return 0, err
	}
	return it.SKUID, nil
}

// Registrant is one line of a sale's registrant list: a shopper and the
// item registered for (0 in a single-SKU sale).
type Registrant struct {
	UserID int64
	SKUID  int64
}

// appendLine appends the registrant's line of the published list: the
// user id, and in a sale of several items a space and the SKU, then
// "\n".
func (r Registrant) appendLine(b []byte) []byte {
	b = strconv.AppendInt(b, r.UserID, 10)
	if r.SKUID != 0 {
		b = strconv.AppendInt(append(b, ' '), r.SKUID, 10)
	}
	return append(b, '\n')
}

// RegistrantPages reads a sale's registrants, the truth, in pages in
// ascending user id order after a given id (mysql.DB): those registered
// before register_until by the database's clock, the list a draw draws.
type RegistrantPages interface {
	Registrants(ctx context.Context, sessionID, after int64, limit int) ([]Registrant, error)
}

// RegistrantSet is the live set admission checks (redis.Gate).
type RegistrantSet interface {
	LoadRegistrants(ctx context.Context, sessionID int64, registrants []Registrant) error
}

// registrantPage is how many registrants one copy step moves: one MySQL
// index range and one Redis round trip each.
const registrantPage = 5000

// CopyRegistrants copies every registrant of a sale from the truth to the
// live set admission checks, and returns how many. Idempotent (a set add
// of a member it holds changes nothing), so the preheat runs it before
// loading the stock: a preheat retried after a failure copies again,
// where a preheat that found the stock loaded would not.
func CopyRegistrants(ctx context.Context, from RegistrantPages, to RegistrantSet, sessionID int64) (int, error) {
	n := 0
	var after int64
	for {
		page, err := from.Registrants(ctx, sessionID, after, registrantPage)
		if err != nil || len(page) == 0 {
			return n, err
		}
		if err := to.LoadRegistrants(ctx, sessionID, page); err != nil {
			return n, err
		}
		n += len(page)
		after = page[len(page)-1].UserID
	}
}

// RegistrantList is the published list of a sale's registrants: the text
// whose SHA-256 is the digest the sale published when registration
// closed, one registrant a line in ascending user id order (in a sale of
// several items, the user id, a space and the item's SKU). With it anyone checks
// their own line, the count and the digest, and after the draw, with the
// revealed seed, the whole ranking. A list read now that is not the one
// published is refused (CONFLICT), never served.
func RegistrantList(ctx context.Context, from RegistrantPages, s *Session) ([]byte, error) {
	if s.RegistrantsDigest == "" {
		return nil, Errorf(ECONFLICT, "session %d: its registrant list is published when registration closes", s.ID)
	}
	var (
		list  []byte
		after int64
		sum   = NewRegistrantDigest()
	)
	for {
		page, err := from.Registrants(ctx, s.ID, after, registrantPage)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			return list, s.sameRegistrants(sum)
		}
		for _, r := range page {
			sum.Add(r)
			list = r.appendLine(list)
		}
		after = page[len(page)-1].UserID
	}
}
