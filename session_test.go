package seckill_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// A session must sell at a positive price: free items are refused at
// creation with a message naming them, since an order of amount 0 could
// never be paid and would only hold stock until its pay timeout.
func TestSessionValidateRefusesFreeItems(t *testing.T) {
	now := time.Now().UTC()
	s := seckill.Session{SKUID: 1, Title: "t", PriceCents: 1, TotalStock: 1, PerUserLimit: 1,
		StartAt: now, EndAt: now.Add(time.Hour)}
	require.NoError(t, s.Validate())
	for _, price := range []int64{0, -1} {
		s.PriceCents = price
		err := s.Validate()
		require.Equal(t, seckill.EINVALID, seckill.ErrorCode(err), "price %d", price)
		require.Contains(t, seckill.ErrorMessage(err), "free items", "price %d", price)
	}
}
