package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/seckill/seckill"
)

// AssertInvariants checks DESIGN.md's invariants on a store and a gate of
// the same session: the stock equations on both sides, compensation
// exactly once per closed order and never for one that holds stock, one
// captured payment per PAID order, and cached views that agree with the
// rows.
func AssertInvariants(t testing.TB, s *MemStore, g *MemGate) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()

	held := 0
	for no, o := range s.orders {
		captured := 0
		for _, p := range s.payments {
			if p.OrderNo == no && p.captured {
				captured++
			}
		}
		dec, res, rel := s.decremented[no], s.restored[no], g.released[no]
		_, admitted := g.made[no]
		assert.LessOrEqual(t, dec, o.Quantity, "%s: stock taken more than once", no)
		switch {
		case o.Status.HoldsStock():
			held += o.Quantity
			assert.Zero(t, res, "%s (%s): stock given back for an order that holds it", no, o.Status)
			assert.Zero(t, rel, "%s (%s): Redis released for an order that holds stock", no, o.Status)
			if admitted {
				assert.Contains(t, g.resv, no, "%s (%s): its Redis reservation must stay live", no, o.Status)
			}
		case o.Status == seckill.StatusFailed:
			assert.Zero(t, dec, "%s: FAILED order took stock", no)
			assert.Zero(t, rel, "%s: FAILED order's Redis stock must not be restored (drift)", no)
		default: // CLOSED, REFUND_PENDING, REFUNDED: compensated
			assert.Equal(t, dec, res, "%s (%s): DB stock must come back exactly once", no, o.Status)
			if admitted {
				assert.Equal(t, 1, rel, "%s (%s): Redis reservation must be released exactly once", no, o.Status)
			}
		}
		if o.Status == seckill.StatusPaid {
			assert.Equal(t, 1, captured, "%s: a PAID order has exactly one captured payment", no)
		} else {
			assert.Zero(t, captured, "%s (%s): captured payment on an unpaid order", no, o.Status)
		}
		if v, ok := g.views[no]; ok {
			assert.Equal(t, o.Status, v.Status, "%s: cached view disagrees with the row", no)
		}
	}
	for _, p := range s.payments {
		assert.Contains(t, s.orders, p.OrderNo, "payment %s for an unknown order", p.PaymentID)
	}
	total := s.session.TotalStock
	assert.GreaterOrEqual(t, s.stock, 0, "db stock went negative")
	assert.Equal(t, total, s.stock+held, "db_stock + Σqty(WAIT_PAY, PAID) = total")
	live := 0
	for _, r := range g.resv {
		live += r.Quantity
	}
	assert.Equal(t, total, g.stock+live, "redis_stock + Σqty(live reservations) = total")
	for no, n := range g.released {
		assert.LessOrEqual(t, n, 1, "%s released twice", no)
	}
}
