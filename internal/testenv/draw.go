package testenv

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
)

// DrawByHand is a draw computed from its definition alone, independent of
// package seckill's code: HMAC-SHA256(seed, the registrant list's digest
// (DigestByHand) || the user id in decimal), ascending bytes, ties by
// user id.
func DrawByHand(seed []byte, users []int64) []int64 {
	out := slices.Clone(users)
	rankByHand(seed, DigestByHand(users), out)
	return out
}

// rankByHand sorts users by HMAC-SHA256(seed, digest || the user id in
// decimal), ties by user id.
func rankByHand(seed, digest []byte, users []int64) {
	rank := func(u int64) string {
		m := hmac.New(sha256.New, seed)
		m.Write(digest)
		m.Write([]byte(strconv.FormatInt(u, 10)))
		return string(m.Sum(nil))
	}
	slices.SortFunc(users, func(a, b int64) int { return cmp.Or(strings.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
}

// DigestByHand is a registrant list's digest by its definition: SHA-256
// of the ids in ascending order, one a line.
func DigestByHand(users []int64) []byte {
	sorted := slices.Clone(users)
	slices.Sort(sorted)
	var b strings.Builder
	for _, u := range sorted {
		fmt.Fprintf(&b, "%d\n", u)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return sum[:]
}

// OneItem is users as the registrants of a single-SKU sale.
func OneItem(users []int64) []seckill.Registrant {
	out := make([]seckill.Registrant, len(users))
	for i, u := range users {
		out[i] = seckill.Registrant{UserID: u}
	}
	return out
}

// DrawSizesByHand is a sale of sizes' draw by its definition alone: the
// digest of the list's lines "user sku" (DigestSizesByHand), one ranking
// of every registrant as DrawByHand's, and each size's order that
// ranking with the other sizes' registrants left out. sizes maps each
// registrant to its size.
func DrawSizesByHand(seed []byte, sizes map[int64]int64) map[int64][]int64 {
	users := slices.Collect(maps.Keys(sizes))
	rankByHand(seed, DigestSizesByHand(sizes), users)
	out := map[int64][]int64{}
	for _, u := range users {
		out[sizes[u]] = append(out[sizes[u]], u)
	}
	return out
}

// DigestSizesByHand is a sale of sizes' list digest by its definition:
// SHA-256 of "user sku" lines in ascending user id order.
func DigestSizesByHand(sizes map[int64]int64) []byte {
	var b strings.Builder
	for _, u := range slices.Sorted(maps.Keys(sizes)) {
		fmt.Fprintf(&b, "%d %d\n", u, sizes[u])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return sum[:]
}

// CommitDraw seals a draw sale's seed with DrawKey and publishes its
// commitment, as the session's workflow has the worker do: for tests that
// create a draw straight in MySQL and register before any workflow runs.
func (e *Env) CommitDraw(sessionID int64) string {
	e.T.Helper()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	acts := e.App.Sessions()
	env.RegisterActivity(acts)
	v, err := env.ExecuteActivity(acts.CommitDraw, sessionID)
	if err != nil {
		e.T.Fatalf("commit the draw of session %d: %v", sessionID, err)
	}
	var commitment string
	if err := v.Get(&commitment); err != nil {
		e.T.Fatal(err)
	}
	return commitment
}

// registerRows is how many registrations one INSERT of RegisterUsers
// writes: a few hundred kilobytes, far below max_allowed_packet.
const registerRows = 5000

// RegisterInBulk registers users first, first+1, … first+n−1 to a sale
// (RegisterUsers) and returns their ids.
func (e *Env) RegisterInBulk(sessionID, first int64, n int) []int64 {
	e.T.Helper()
	users := make([]int64, n)
	for i := range users {
		users[i] = first + int64(i)
	}
	e.RegisterUsers(sessionID, users)
	return users
}

// RegisterUsers registers users to a sale straight in MySQL, registerRows
// rows an INSERT, stamped at the opening of its registration window
// (before register_until whatever the clock says now): the API's
// registration path is tested and measured elsewhere, and a million of
// them one by one would only slow a test.
func (e *Env) RegisterUsers(sessionID int64, users []int64) {
	e.T.Helper()
	e.RegisterFor(sessionID, OneItem(users))
}

// RegisterFor registers each registrant for its item as RegisterUsers
// does.
func (e *Env) RegisterFor(sessionID int64, regs []seckill.Registrant) {
	e.T.Helper()
	db, err := sql.Open("mysql", e.DSN)
	if err != nil {
		e.T.Fatal(err)
	}
	defer db.Close()
	var from string
	if err := db.QueryRow("SELECT DATE_FORMAT(register_from, '%Y-%m-%d %H:%i:%s.%f') FROM sessions WHERE id = ?", sessionID).Scan(&from); err != nil {
		e.T.Fatalf("register in bulk: the window of session %d: %v", sessionID, err)
	}
	var q strings.Builder
	for len(regs) > 0 {
		page := regs[:min(registerRows, len(regs))]
		regs = regs[len(page):]
		q.Reset()
		q.WriteString("INSERT INTO registrations (session_id, user_id, sku_id, created_at) VALUES ")
		for i, r := range page {
			if i > 0 {
				q.WriteByte(',')
			}
			fmt.Fprintf(&q, "(%d,%d,%d,'%s')", sessionID, r.UserID, r.SKUID, from)
		}
		if _, err := db.Exec(q.String()); err != nil {
			e.T.Fatalf("register in bulk: %v", err)
		}
	}
}

// WaitCommitted waits until the worker has committed a draw sale's seed
// (the session's workflow asks it at its start) and returns the
// commitment: registration opens with it.
func (e *Env) WaitCommitted(sessionID int64) string {
	e.T.Helper()
	var commitment string
	e.Eventually(20*time.Second, "the worker commits the draw's seed", func() error {
		s, _, err := e.DB.Session(context.Background(), sessionID)
		if err == nil && s.DrawCommitment == "" {
			err = fmt.Errorf("session %d: no commitment yet", sessionID)
		}
		if err == nil {
			commitment = s.DrawCommitment
		}
		return err
	})
	// An API's copy of the session (SessionCacheTTL old at most, 50 ms
	// here) shows it after this.
	time.Sleep(100 * time.Millisecond)
	return commitment
}
