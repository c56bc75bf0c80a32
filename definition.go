package seckill

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// SessionDefinition is a sale as an operator writes it down: the body of
// POST /admin/v1/sessions, which the Go client sends and the API decodes.
// Pointers tell a missing field from a zero one; times are RFC 3339.
// Session turns it into the sale, with the defaults an operator may leave
// out.
type SessionDefinition struct {
	SKUID      *int64  `json:"sku_id"`
	Title      *string `json:"title"`
	PriceCents *int64  `json:"price_cents"`
	// Currency is optional: the deployment's SECKILL_CURRENCY when absent.
	Currency     *string `json:"currency"`
	Stock        *int    `json:"stock"`
	PerUserLimit *int    `json:"per_user_limit"`
	StartAt      *string `json:"start_at"`
	EndAt        *string `json:"end_at"`
	// RequireTicket and RequireCaptcha are optional (default false); a
	// captcha implies the ticket.
	RequireTicket  *bool `json:"require_ticket"`
	RequireCaptcha *bool `json:"require_captcha"`
	// Mode is first_come (default), reserved or draw; a reserved or draw
	// sale registers shoppers from RegisterFrom (default: now) until
	// RegisterUntil (default: start_at); a draw's rights last
	// RightTTLSeconds (default DefaultRightTTL) and buy one unit each
	// (per_user_limit may be left out).
	Mode            *string `json:"mode"`
	RegisterFrom    *string `json:"register_from"`
	RegisterUntil   *string `json:"register_until"`
	RightTTLSeconds *int    `json:"right_ttl_seconds"`
	// Items make a sale of several items (sizes), in place of sku_id,
	// price_cents and stock.
	Items []ItemDefinition `json:"items"`
}

// ItemDefinition is one item of a sale of several.
type ItemDefinition struct {
	SKUID      *int64  `json:"sku_id"`
	Title      *string `json:"title"`
	PriceCents *int64  `json:"price_cents"`
	Stock      *int    `json:"stock"`
}

// DefinitionOf is s as its definition: what creates it again.
func DefinitionOf(s *Session) *SessionDefinition {
	start, end := s.StartAt.UTC().Format(time.RFC3339Nano), s.EndAt.UTC().Format(time.RFC3339Nano)
	d := &SessionDefinition{Title: &s.Title, PerUserLimit: &s.PerUserLimit, StartAt: &start, EndAt: &end}
	if s.Several() {
		for i := range s.Items {
			it := &s.Items[i]
			d.Items = append(d.Items, ItemDefinition{&it.SKUID, &it.Title, &it.PriceCents, &it.TotalStock})
		}
	} else {
		d.SKUID, d.PriceCents, d.Stock = &s.SKUID, &s.PriceCents, &s.TotalStock
	}
	set := func(v bool) *bool {
		if !v {
			return nil
		}
		return &v
	}
	d.RequireTicket, d.RequireCaptcha = set(s.RequireTicket), set(s.RequireCaptcha)
	for _, f := range []struct {
		to  **string
		val string
	}{{&d.Currency, s.Currency}, {&d.Mode, string(s.Mode)}} {
		if f.val != "" {
			v := f.val
			*f.to = &v
		}
	}
	for _, f := range []struct {
		to **string
		at time.Time
	}{{&d.RegisterFrom, s.RegisterFrom}, {&d.RegisterUntil, s.RegisterUntil}} {
		if !f.at.IsZero() {
			v := f.at.UTC().Format(time.RFC3339Nano)
			*f.to = &v
		}
	}
	if s.RightTTLSeconds != 0 {
		d.RightTTLSeconds = &s.RightTTLSeconds
	}
	return d
}

// Fingerprint tells one create from another under the same
// Idempotency-Key: the definition as decoded, not as sent, so the same
// fields in another order or spacing are the same request.
func (d *SessionDefinition) Fingerprint() string {
	canonical, _ := json.Marshal(d)
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// Session is the sale d defines, validated, with the defaults of what d
// leaves out as of now.
func (d *SessionDefinition) Session(now time.Time) (*Session, error) {
	draw := d.Mode != nil && SessionMode(*d.Mode) == ModeDraw
	for _, f := range []struct {
		name    string
		present bool
	}{
		{"title", d.Title != nil}, {"per_user_limit", d.PerUserLimit != nil || draw},
		{"start_at", d.StartAt != nil}, {"end_at", d.EndAt != nil},
	} {
		if !f.present {
			return nil, Errorf(EINVALID, "field %q is required", f.name)
		}
	}
	items, err := d.items()
	if err != nil {
		return nil, err
	}
	s := &Session{Title: *d.Title, PerUserLimit: 1} // a draw's right buys one unit
	if d.PerUserLimit != nil {
		s.PerUserLimit = *d.PerUserLimit
	}
	s.SetItems(items)
	if d.Currency != nil {
		s.Currency = *d.Currency
	}
	if d.RequireTicket != nil {
		s.RequireTicket = *d.RequireTicket
	}
	if d.RequireCaptcha != nil && *d.RequireCaptcha {
		s.RequireCaptcha, s.RequireTicket = true, true
	}
	if d.Mode != nil {
		s.Mode = SessionMode(*d.Mode)
	}
	for _, f := range []struct {
		name string
		raw  *string
		to   *time.Time
	}{{"start_at", d.StartAt, &s.StartAt}, {"end_at", d.EndAt, &s.EndAt},
		{"register_from", d.RegisterFrom, &s.RegisterFrom}, {"register_until", d.RegisterUntil, &s.RegisterUntil}} {
		if f.raw == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339, *f.raw)
		if err != nil {
			return nil, Errorf(EINVALID, "field %q must be an RFC 3339 time", f.name)
		}
		*f.to = stored(t)
	}
	if d.RightTTLSeconds != nil {
		s.RightTTLSeconds = *d.RightTTLSeconds
	} else if s.Mode == ModeDraw {
		s.RightTTLSeconds = int(DefaultRightTTL.Seconds())
	}
	if s.Registers() {
		// Registration runs from the sale's creation until its start.
		if s.RegisterFrom.IsZero() {
			s.RegisterFrom = stored(now)
		}
		if s.RegisterUntil.IsZero() {
			s.RegisterUntil = s.StartAt
		}
	}
	return s, s.Validate()
}

// items are d's items, or the single-SKU sale's one.
func (d *SessionDefinition) items() ([]Item, error) {
	if d.Items == nil {
		for _, f := range []struct {
			name    string
			present bool
		}{{"sku_id", d.SKUID != nil}, {"price_cents", d.PriceCents != nil}, {"stock", d.Stock != nil}} {
			if !f.present {
				return nil, Errorf(EINVALID, "field %q is required (or items, for a sale of several)", f.name)
			}
		}
		return []Item{{SKUID: *d.SKUID, Title: *d.Title, PriceCents: *d.PriceCents, TotalStock: *d.Stock}}, nil
	}
	if d.SKUID != nil || d.PriceCents != nil || d.Stock != nil {
		return nil, Errorf(EINVALID, "a sale of items takes sku_id, price_cents and stock in each item, not beside them")
	}
	if len(d.Items) == 0 || len(d.Items) > MaxItems {
		return nil, Errorf(EINVALID, "items must list 1 to %d items", MaxItems)
	}
	out := make([]Item, len(d.Items))
	for i, it := range d.Items {
		if it.SKUID == nil || it.Title == nil || it.PriceCents == nil || it.Stock == nil {
			return nil, Errorf(EINVALID, "items[%d] needs sku_id, title, price_cents and stock", i)
		}
		out[i] = Item{SKUID: *it.SKUID, Title: *it.Title, PriceCents: *it.PriceCents, TotalStock: *it.Stock}
	}
	return out, nil
}
