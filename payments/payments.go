// Package payments holds the rules of an order's payment between the HTTP
// front door, the order's workflow and the payment provider: opening the
// checkout a shopper pays at (checkout.go), and asking the provider before
// an unpaid order closes (settle.go), so that a payment whose webhook was
// lost or late never closes a paid order. Each port is a small interface
// declared here; the providers (sandbox, paymenthttp, stripe) and MySQL
// implement them.
package payments

import (
	"context"

	"github.com/seckill/seckill"
)

// Checkouts remembers which orders have a provider's payment: the close
// asks the provider only about those, since a payment starts at its
// checkout.
type Checkouts interface {
	// SaveCheckout records the order's payment; saving it again (the same
	// order) keeps the first.
	SaveCheckout(ctx context.Context, c *seckill.Checkout) error
	// Checkout is the order's payment; NOT_FOUND when none was opened.
	Checkout(ctx context.Context, orderNo string) (*seckill.Checkout, error)
}
