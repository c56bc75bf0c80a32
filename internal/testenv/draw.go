package testenv

import (
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// registerRows is how many registrations one INSERT of RegisterInBulk
// writes: a few hundred kilobytes, far below max_allowed_packet.
const registerRows = 5000

// RegisterInBulk registers users first, first+1, … first+n−1 to a sale
// straight in MySQL, registerRows rows an INSERT, and returns their ids:
// the API's registration path is tested and measured elsewhere, and a
// million of them one by one would only slow a test.
func (e *Env) RegisterInBulk(sessionID, first int64, n int) []int64 {
	e.T.Helper()
	db, err := sql.Open("mysql", e.DSN)
	if err != nil {
		e.T.Fatal(err)
	}
	defer db.Close()
	users := make([]int64, 0, n)
	var q strings.Builder
	for len(users) < n {
		q.Reset()
		q.WriteString("INSERT INTO registrations (session_id, user_id, created_at) VALUES ")
		for i := 0; i < registerRows && len(users) < n; i++ {
			u := first + int64(len(users))
			if i > 0 {
				q.WriteByte(',')
			}
			fmt.Fprintf(&q, "(%d,%d,UTC_TIMESTAMP(6))", sessionID, u)
			users = append(users, u)
		}
		if _, err := db.Exec(q.String()); err != nil {
			e.T.Fatalf("register in bulk: %v", err)
		}
	}
	return users
}
