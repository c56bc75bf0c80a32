package mysql

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill"
)

type checkoutRow struct {
	OrderNo     string `gorm:"primaryKey"`
	Provider    string
	PaymentID   *string
	CheckoutURL *string
	ExpiresAt   time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (checkoutRow) TableName() string { return "checkouts" }

// SaveCheckout records an order's checkout. The first save (before the
// provider is asked) has no payment id; a later one fills it in. A payment
// id once recorded is never replaced: the provider was asked with the
// order number as its idempotency key, so a second answer names the same
// payment.
func (db *DB) SaveCheckout(ctx context.Context, c *seckill.Checkout) error {
	now := db.now()
	row := checkoutRow{OrderNo: c.OrderNo, Provider: c.Provider, PaymentID: nullable(c.PaymentID),
		CheckoutURL: nullable(c.CheckoutURL), ExpiresAt: c.ExpiresAt, CreatedAt: now, UpdatedAt: now}
	return db.gorm.WithContext(ctx).Clauses(clause.OnConflict{DoUpdates: clause.Assignments(map[string]any{
		"payment_id":   gorm.Expr("COALESCE(payment_id, VALUES(payment_id))"),
		"checkout_url": gorm.Expr("COALESCE(checkout_url, VALUES(checkout_url))"),
		"updated_at":   now,
	})}).Create(&row).Error
}

// Checkout is the order's checkout; NOT_FOUND when none was opened.
func (db *DB) Checkout(ctx context.Context, orderNo string) (*seckill.Checkout, error) {
	var row checkoutRow
	err := db.gorm.WithContext(ctx).Where("order_no = ?", orderNo).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s has no checkout", orderNo)
	} else if err != nil {
		return nil, err
	}
	c := &seckill.Checkout{Provider: row.Provider, OrderNo: row.OrderNo, ExpiresAt: row.ExpiresAt.UTC()}
	if row.PaymentID != nil {
		c.PaymentID = *row.PaymentID
	}
	if row.CheckoutURL != nil {
		c.CheckoutURL = *row.CheckoutURL
	}
	return c, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
