package seckill

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"time"
)

// This file is the order protocol every path shares: the API that admits
// an order, the webhook that pays a QUEUED one, the relay that starts what
// the API could not, the sweep that closes what no workflow will. Each of
// them mints or parses order numbers and builds the workflow input from a
// reservation the same way, so none of them can drift from the others.

// NewOrderNo returns "<session id>-<UUIDv7 hex>": unique without any
// coordination, roughly time-ordered for the index (the first 48 bits are
// the Unix milliseconds), and telling which session's Redis keys hold it
// (OrderNoSession). Built from the standard library so the domain imports
// nothing else.
func NewOrderNo(sessionID int64) string {
	var u [16]byte
	binary.BigEndian.PutUint64(u[:8], uint64(time.Now().UnixMilli())<<16)
	_, _ = rand.Read(u[6:]) // never fails (crypto/rand.Read panics instead)
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // RFC 9562 variant
	return strconv.FormatInt(sessionID, 10) + "-" + hex.EncodeToString(u[:])
}

// OrderNoSession returns the session id encoded at the front of an order
// number ("<session>-<unique>"), which lets the hot poll path find the
// order's per-session Redis keys without a database.
func OrderNoSession(orderNo string) (int64, bool) {
	var id int64
	for i := 0; i < len(orderNo); i++ {
		c := orderNo[i]
		switch {
		case c >= '0' && c <= '9':
			id = id*10 + int64(c-'0')
			if id > 1<<53 {
				return 0, false
			}
		case c == '-' && i > 0 && i < len(orderNo)-1:
			return id, id > 0
		default:
			return 0, false
		}
	}
	return 0, false
}

// NewOrderRequest is the workflow input of a reserved order: the
// reservation, its item's SKU and price as they are now, and the pay
// timeout, counted from the reservation (PayBy). The API (at admission and
// when a QUEUED order is paid), the relay and the sweep all build it here,
// so an order started by any of them is the same order.
func NewOrderRequest(r Reservation, sess *Session, payTimeout time.Duration) *OrderRequest {
	it := itemOf(sess, r.SKUID)
	r.SKUID = it.SKUID
	req := &OrderRequest{Reservation: r, Title: it.Title, PriceCents: it.PriceCents, Currency: sess.Currency, PayTimeout: payTimeout}
	if payTimeout > 0 && !r.ReservedAt.IsZero() {
		req.PayBy = r.ReservedAt.Add(payTimeout)
	}
	return req
}

// Request is the inverse of OrderRequest.Order: the workflow input of an
// order known only by its row (the sweep closing one whose workflow is
// gone). The unit price is the amount over the quantity, which is how the
// amount was made; the pay timeout is spent and left zero, but the
// deadline is the row's (the sweep asks the payment provider from it, as
// the workflow's close does from its timer).
func (o *Order) Request() *OrderRequest {
	sess := &Session{SKUID: o.SKUID, Title: o.Title}
	if o.Quantity > 0 {
		sess.PriceCents = o.AmountCents / int64(o.Quantity)
	}
	r := Reservation{OrderNo: o.OrderNo, SessionID: o.SessionID, UserID: o.UserID, Quantity: o.Quantity,
		ReservedAt: o.CreatedAt, TraceID: o.TraceID, SKUID: o.SKUID}
	req := NewOrderRequest(r, sess, 0)
	req.PayBy = o.PayDeadline
	return req
}

// itemOf is item skuID of sess: the sale's own when it sells one item
// (whatever skuID says), the named item in a sale of several. One the
// sale does not list keeps its SKU at price 0: MySQL refuses its order
// (no stock of that item), which closes.
func itemOf(sess *Session, skuID int64) Item {
	if !sess.Several() {
		return sess.AllItems()[0]
	}
	if it, err := sess.Item(skuID); err == nil {
		return it
	}
	return Item{SKUID: skuID}
}
