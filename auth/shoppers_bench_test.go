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

// BenchmarkShopperVerifyFirst is the check of a token this process has
// not seen yet (each shopper's first click of a burst): a token IssueToken
// signed, checked by Shoppers.own. Tokens are issued before the clock
// starts.
func BenchmarkShopperVerifyFirst(b *testing.B) {
	secret := []byte("bench-secret")
	now := time.Now()
	toks := make([]string, 1<<16)
	for i := range toks {
		t, err := auth.IssueToken(secret, int64(i+1), time.Hour, now)
		if err != nil {
			b.Fatal(err)
		}
		toks[i] = t
	}
	v := &auth.Shoppers{Secrets: [][]byte{secret}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(toks) {
			b.StopTimer()
			v, i = &auth.Shoppers{Secrets: [][]byte{secret}}, 0
			b.StartTimer()
		}
		if _, err := v.Verify(toks[i]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkShopperVerifyRefused is the refusal of a token in our form
// that does not pass: forged (signed with another secret, as a bot's
// flood of made-up tokens) and expired (a page left open past its token's
// end, clicking on). Refusals are never remembered, so each is checked in
// full.
func BenchmarkShopperVerifyRefused(b *testing.B) {
	secret := []byte("bench-secret")
	now := time.Now()
	forged, err := auth.IssueToken([]byte("someone else's"), 42, time.Hour, now)
	if err != nil {
		b.Fatal(err)
	}
	expired, err := auth.IssueToken(secret, 42, time.Minute, now.Add(-time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	for name, tok := range map[string]string{"forged": forged, "expired": expired} {
		b.Run(name, func(b *testing.B) {
			v := &auth.Shoppers{Secrets: [][]byte{secret}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(tok); err == nil {
					b.Fatal("refused token accepted")
				}
			}
		})
	}
}
