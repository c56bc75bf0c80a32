package seckill

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxItems caps the items of one sale: each is a field of the sale's
// Redis hash and a row the session's cache reads with it.
const MaxItems = 100

// Item is one of a sale's goods (a size, a colour): its SKU, title, price
// and stock. A sale of one item keeps it in the Session's own fields
// (SKUID, Title, PriceCents, TotalStock) and Items is empty; a sale of
// several lists them in Items, its SKUID and PriceCents are zero and its
// TotalStock is their sum. The per-user limit counts across the sale.
type Item struct {
	SKUID      int64  `json:"sku_id"`
	Title      string `json:"title"`
	PriceCents int64  `json:"price_cents"`
	TotalStock int    `json:"total_stock"`
	// DrawnStock is the stock a draw sale's draw drew for the item, fixed
	// when it drew (seckill draw verify checks its places with it).
	DrawnStock int `json:"drawn_stock,omitempty"`
}

// ItemView is an item as the session's JSON shows it, with its remaining
// stock at the instant of the answer.
type ItemView struct {
	Item
	RemainingStock int `json:"remaining_stock"`
}

// SetItems makes s a sale of items: one is the single-SKU sale (titled
// by the sale's title when it has one), several are listed in Items with
// TotalStock their sum.
func (s *Session) SetItems(items []Item) {
	if len(items) == 1 {
		it := items[0]
		s.SKUID, s.PriceCents, s.TotalStock, s.Items = it.SKUID, it.PriceCents, it.TotalStock, nil
		if s.Title == "" {
			s.Title = it.Title
		}
		return
	}
	s.SKUID, s.PriceCents, s.TotalStock, s.Items = 0, 0, 0, items
	for _, it := range items {
		s.TotalStock += it.TotalStock
	}
}

// Several reports whether s is a sale of several items.
func (s *Session) Several() bool { return len(s.Items) > 0 }

// AllItems are the sale's items: Items, or the one item a single-SKU sale
// is.
func (s *Session) AllItems() []Item {
	if s.Several() {
		return s.Items
	}
	return []Item{{SKUID: s.SKUID, Title: s.Title, PriceCents: s.PriceCents, TotalStock: s.TotalStock}}
}

// Item is the item a purchase or a change names: skuID in a sale of
// several (required there), or the sale's one item (skuID 0 or its own).
func (s *Session) Item(skuID int64) (Item, error) {
	if skuID == 0 && s.Several() {
		return Item{}, Errorf(EINVALID, "sku_id is required: session %d sells %d items", s.ID, len(s.Items))
	}
	for _, it := range s.AllItems() {
		if skuID == 0 || it.SKUID == skuID {
			return it, nil
		}
	}
	return Item{}, Errorf(EINVALID, "session %d has no item with sku_id %d", s.ID, skuID)
}

// validateItems checks a sale of several items: each one's fields as a
// single-SKU sale's, SKUs unique.
func (s *Session) validateItems() error {
	if !s.Several() {
		return nil
	}
	if len(s.Items) > MaxItems {
		return Errorf(EINVALID, "a sale has at most %d items, not %d", MaxItems, len(s.Items))
	}
	seen := make(map[int64]bool, len(s.Items))
	for i, it := range s.Items {
		if err := checkTitle(fmt.Sprintf("items[%d].title", i), it.Title); err != nil {
			return err
		}
		switch {
		case it.SKUID <= 0:
			return Errorf(EINVALID, "items[%d].sku_id must be a positive integer", i)
		case seen[it.SKUID]:
			return Errorf(EINVALID, "items[%d].sku_id %d is listed twice", i, it.SKUID)
		case it.PriceCents <= 0:
			return Errorf(EINVALID, "items[%d].price_cents must be a positive integer: free items are not supported", i)
		case it.TotalStock <= 0 || it.TotalStock > 10_000_000:
			return Errorf(EINVALID, "items[%d].stock must be between 1 and 10000000", i)
		}
		seen[it.SKUID] = true
	}
	return nil
}

// checkTitle refuses a title a shopper could not read: blank, over 200
// bytes, not UTF-8, or holding control characters (a NUL, a newline),
// which the shop page, the CSV export and a provider's checkout would
// carry as they are.
func checkTitle(field, t string) error {
	switch {
	case strings.TrimSpace(t) == "" || len(t) > 200:
		return Errorf(EINVALID, "%s must be 1 to 200 bytes, not blank", field)
	case !utf8.ValidString(t) || strings.ContainsFunc(t, unicode.IsControl):
		return Errorf(EINVALID, "%s must be UTF-8 text without control characters (a newline, a tab, a NUL)", field)
	}
	return nil
}
