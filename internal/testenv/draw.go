package testenv

import (
	"crypto/hmac"
	"crypto/sha256"
	"slices"
	"strconv"
)

// DrawByHand is a draw computed from its definition alone, independent of
// package seckill's code: HMAC-SHA256(seed, the user id in decimal),
// ascending bytes, ties by user id.
func DrawByHand(seed []byte, users []int64) []int64 {
	rank := func(u int64) string {
		m := hmac.New(sha256.New, seed)
		m.Write([]byte(strconv.FormatInt(u, 10)))
		return string(m.Sum(nil))
	}
	out := slices.Clone(users)
	slices.SortFunc(out, func(a, b int64) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			if ra < rb {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	return out
}
