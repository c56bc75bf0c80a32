package seckill_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// An order number is "<session>-<UUIDv7 hex>": the session parses back out
// of it, the version and variant bits are those of RFC 9562, and numbers
// minted later never sort before earlier ones at millisecond resolution
// (the index stays roughly time-ordered).
func TestNewOrderNo(t *testing.T) {
	shape := regexp.MustCompile(`^7-[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$`)
	seen := map[string]bool{}
	prev := ""
	for i := 0; i < 1000; i++ {
		no := seckill.NewOrderNo(7)
		if !shape.MatchString(no) {
			t.Fatalf("%q is not <session>-<UUIDv7 hex>", no)
		}
		if id, ok := seckill.OrderNoSession(no); !ok || id != 7 {
			t.Fatalf("OrderNoSession(%q) = %d, %v", no, id, ok)
		}
		if seen[no] {
			t.Fatalf("%q minted twice", no)
		}
		seen[no] = true
		if prev != "" && no[:14] < prev[:14] {
			t.Fatalf("%q sorts before the earlier %q", no, prev)
		}
		prev = no
	}
}

// The sweep rebuilds a lost order's workflow input from its row: the
// inverse of OrderRequest.Order, the unit price being amount / quantity,
// the deadline the row's.
func TestOrderRequestFromItsOrder(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := seckill.Reservation{OrderNo: "3-ab", SessionID: 3, UserID: 9, Quantity: 2, ReservedAt: at, TraceID: "tr"}
	req := seckill.NewOrderRequest(r, &seckill.Session{SKUID: 11, PriceCents: 450}, time.Minute)
	back := req.Order(seckill.StatusWaitPay, at.Add(time.Minute)).Request()
	if back.Reservation.OrderNo != r.OrderNo || back.SessionID != 3 || back.UserID != 9 || back.Quantity != 2 ||
		!back.ReservedAt.Equal(at) || back.TraceID != "tr" || back.SKUID != 11 || back.PriceCents != 450 || back.PayTimeout != 0 ||
		!back.PayBy.Equal(at.Add(time.Minute)) {
		t.Fatalf("round trip: %+v, want the request of %+v", back, req)
	}
}

// The workflow input's pay deadline is the pay timeout after the
// reservation; without a timeout or a reservation time there is none (the
// workflow then counts from its start).
func TestNewOrderRequestPayBy(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	sess := &seckill.Session{SKUID: 3, PriceCents: 250}
	r := seckill.Reservation{OrderNo: "7-x", SessionID: 7, UserID: 1, Quantity: 2, ReservedAt: at}
	req := seckill.NewOrderRequest(r, sess, 15*time.Minute)
	require.Equal(t, at.Add(15*time.Minute), req.PayBy)
	require.Equal(t, int64(500), req.AmountCents())
	require.True(t, seckill.NewOrderRequest(r, sess, 0).PayBy.IsZero())
	r.ReservedAt = time.Time{}
	require.True(t, seckill.NewOrderRequest(r, sess, 15*time.Minute).PayBy.IsZero())
}
