package drill

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/seckill/seckill/client"
)

// attempt is one purchase attempt (one click): a key, retried until decided.
type attempt struct {
	user  int64
	api   *client.Client // the shopper's
	key   string
	final answer
	// sawUnknown: some answer on the way was undecided.
	sawUnknown bool
	// replay is the answer to the same key after the sale.
	replay answer
}

// answer is what the API said to one purchase request.
type answer struct {
	status  int    // 0: network error
	code    string // error code
	orderNo string
	layer   string // the API layer that answered
	err     error
	retryIn time.Duration
}

// unknown is true for an answer that does not decide the purchase: the
// same key must be asked again.
func (a answer) unknown() bool {
	return a.status == 0 || a.status >= 500 || a.status == http.StatusTooManyRequests
}

func (a answer) String() string {
	switch {
	case a.status == 0:
		return "network error"
	case a.orderNo != "":
		return fmt.Sprintf("%d %s", a.status, a.orderNo)
	}
	return fmt.Sprintf("%d %s", a.status, a.code)
}

// buy sends one purchase request of an attempt.
func (r *runner) buy(ctx context.Context, a *attempt) answer {
	placed, err := a.api.Buy(ctx, r.res.SessionID, client.BuyOptions{Quantity: 1, IdempotencyKey: a.key})
	r.mu.Lock()
	r.res.Requests++
	r.mu.Unlock()
	ans := answer{retryIn: 200 * time.Millisecond}
	defer func() {
		if ans.unknown() {
			r.mu.Lock()
			r.res.Unknowns[ans.String()]++
			r.mu.Unlock()
			a.sawUnknown = true
		}
	}()
	var m client.Meta
	var refused *client.Error
	switch {
	case err == nil:
		m, ans.orderNo = placed.Meta, placed.OrderNo
	case errors.As(err, &refused):
		m, ans.code = refused.Meta, refused.Err.Code
		if refused.Body != nil {
			// Not the error shape: keep what came, for the report.
			ans.code = fmt.Sprintf("(body %q)", truncate(string(refused.Body), 120))
		}
	default:
		ans.err = err
		return ans
	}
	ans.status, ans.layer = m.StatusCode, m.Layer()
	if d := m.RetryAfter(); d > 0 {
		// Honoured, but kept short: the drill is bounded in time.
		ans.retryIn = min(d, time.Second)
	}
	if ans.status >= 500 && ans.status != http.StatusServiceUnavailable {
		// Undecided all the same (retried with the key), but only 503 is
		// the contract's answer for it.
		r.problem("purchase %s answered %s: an undecided outcome must be 503 UNAVAILABLE", a.key, ans)
	}
	return ans
}

// ask sends an attempt until it is decided, at most tries times (0: until
// the deadline), and returns the last answer.
func (r *runner) ask(ctx context.Context, a *attempt, tries int, deadline time.Time) answer {
	for i := 0; ; i++ {
		ans := r.buy(ctx, a)
		if !ans.unknown() || (tries > 0 && i+1 >= tries) || time.Now().Add(ans.retryIn).After(deadline) {
			return ans
		}
		select {
		case <-ctx.Done():
			return ans
		case <-time.After(ans.retryIn):
		}
	}
}

func truncate(v any, n int) string {
	s := fmt.Sprint(v)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
