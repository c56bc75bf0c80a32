package auth_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill/auth"
)

// BenchmarkShopperVerify is the JWT check of a shopper who clicks again
// with the token the shop already holds, as every request of a burst
// does: its allocations are what a keyed loser pays before admission.
func BenchmarkShopperVerify(b *testing.B) {
	secret := []byte("bench-secret")
	now := time.Now()
	tok, err := auth.IssueToken(secret, 42, time.Hour, now)
	if err != nil {
		b.Fatal(err)
	}
	v := &auth.Shoppers{Secrets: [][]byte{secret}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}
