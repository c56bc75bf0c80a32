package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
)

// The follower waits for the orders' creation as long as the order tier
// goes on creating them, not a fixed Settle: twelve orders created one
// every 200 ms take longer than the Settle of 1.5 s and are all followed;
// one never created is given up on a Settle after the last.
func TestFollowerWaitsWhileOrdersAreCreated(t *testing.T) {
	const orders, gap = 12, 200 * time.Millisecond
	t0 := time.Now()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		no := strings.TrimPrefix(req.URL.Path, "/api/v1/orders/")
		var i int
		_, _ = fmt.Sscanf(no, "o-%d", &i)
		o := seckill.Order{OrderNo: no, Status: seckill.StatusQueued}
		if i < orders && time.Since(t0) >= time.Duration(i+1)*gap {
			o.Status, o.CreatedAt = seckill.StatusWaitPay, time.Now()
		}
		_ = json.NewEncoder(w).Encode(o)
	}))
	defer api.Close()
	shop := client.New(api.URL)
	r := &stepRunner{cfg: Config{Settle: 1500 * time.Millisecond}, shoppers: []shopper{{api: shop}}}
	var won []result
	for i := range orders + 1 { // the last is never created
		won = append(won, result{orderNo: fmt.Sprintf("o-%d", i)})
	}
	created, missed := r.waitCreated(context.Background(), won, nil)
	require.ErrorContains(t, missed, fmt.Sprintf("o-%d", orders), "the order that never came is named")
	require.Len(t, created, orders, "every order the tier created, though it took longer than Settle")
	require.NotContains(t, created, fmt.Sprintf("o-%d", orders))
}

// A step without a winner still measures its sold-out burst: follow runs
// what comes once the orders are created, and returns its error.
func TestFollowWithoutWinners(t *testing.T) {
	r := &stepRunner{step: &Step{}}
	ran := 0
	require.NoError(t, r.follow(context.Background(), nil, func() error { ran++; return nil }))
	require.Equal(t, 1, ran)
	failed := fmt.Errorf("the sold-out burst failed")
	require.ErrorIs(t, r.follow(context.Background(), nil, func() error { return failed }), failed)
	require.NoError(t, r.follow(context.Background(), nil, nil))
}

// A cancel that meets an order its pay timer closed is the race the
// workflow settles; any other refusal is the bench's to report.
func TestClosedByItsTimer(t *testing.T) {
	deadline := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	closed := seckill.Errorf(seckill.ECONFLICT, "order 1-x is CLOSED and cannot be cancelled")
	for _, tc := range []struct {
		name     string
		err      error
		deadline time.Time
		now      time.Time
		want     bool
	}{
		{"conflict after the deadline", closed, deadline, deadline.Add(time.Millisecond), true},
		{"conflict at the deadline", closed, deadline, deadline, true},
		{"conflict before the deadline", closed, deadline, deadline.Add(-time.Second), false},
		{"conflict, deadline unknown", closed, time.Time{}, deadline, false},
		{"another error after the deadline", seckill.Errorf(seckill.EUNAVAILABLE, "down"), deadline, deadline.Add(time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, closedByItsTimer(tc.err, tc.deadline, tc.now))
		})
	}
}

// A payment counts as late from the order's earliest deadline on: its
// purchase's send time plus the stack's pay timeout; with no timeout
// known (--pay-timeout 0) never.
func TestPaidLate(t *testing.T) {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	x := result{at: 300 * time.Millisecond}
	r := &stepRunner{start: start, cfg: Config{PayTimeout: 20 * time.Second}}
	payBy := r.payBy(x)
	require.Equal(t, start.Add(20300*time.Millisecond), payBy)
	require.False(t, paidLate(payBy, payBy.Add(-time.Millisecond)))
	require.True(t, paidLate(payBy, payBy))
	require.True(t, paidLate(payBy, payBy.Add(time.Second)))

	r.cfg.PayTimeout = 0
	require.True(t, r.payBy(x).IsZero())
	require.False(t, paidLate(r.payBy(x), payBy.Add(time.Hour)))
}
