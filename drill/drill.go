// Package drill is the fault drill operators run before a real sale (and
// the tests run in CI): against a running stack, through its public HTTP
// API only, it creates a session, bursts far more shoppers than stock at
// it, lets the caller break something in the middle (kill the worker,
// cut MySQL), pays part of the orders through signed webhooks, cancels the
// rest, pays one cancelled order late, and checks the invariants: exactly
// the stock sold, nobody over the limit, no order lost or doubled, every
// unpaid unit back, the late payment refunded or waiting for it.
package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/seckill/seckill"
)

// Config describes one drill.
type Config struct {
	BaseURL       string // the API, e.g. http://127.0.0.1:8080
	AdminToken    string
	JWTSecret     []byte // to mint shopper tokens
	WebhookSecret []byte // to sign payments as the provider would
	Stock         int
	PerUserLimit  int
	Users         int // shoppers in the burst
	Tries         int // concurrent requests per shopper
	PayRatio      float64
	// Settle bounds each wait (orders reaching WAIT_PAY, PAID, CLOSED).
	Settle time.Duration
	// DuringBurst runs while the burst is in flight (kill something);
	// AfterBurst once every request has an answer (bring it back).
	DuringBurst, AfterBurst func()
	// IssueToken mints a shopper token (the api package's IssueToken).
	IssueToken func(secret []byte, user int64, ttl time.Duration, now time.Time) (string, error)
	HTTP       *http.Client
	Progress   io.Writer
}

// Result is what the drill saw.
type Result struct {
	SessionID int64          `json:"session_id"`
	Requests  int            `json:"requests"`
	Accepted  int            `json:"accepted"`
	Refusals  map[string]int `json:"refusals"`
	Paid      int            `json:"paid"`
	Cancelled int            `json:"cancelled"`
	LateOrder string         `json:"late_payment_order,omitempty"`
	Report    map[string]any `json:"reconcile"`
	Problems  []string       `json:"problems"`
	OK        bool           `json:"ok"`
}

type order struct {
	user  int64
	token string
	no    string
}

type runner struct {
	cfg Config
	res *Result
}

// Run runs the drill. An error means the drill could not run; a drill that
// ran and found broken invariants returns a Result with OK false.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 2 * time.Minute
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	r := &runner{cfg: cfg, res: &Result{Refusals: map[string]int{}, Problems: []string{}}}
	if err := r.createSession(ctx); err != nil {
		return nil, err
	}
	won, err := r.burst(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.settle(ctx, won); err != nil {
		return nil, err
	}
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	r.res.OK = len(r.res.Problems) == 0
	return r.res, nil
}

func (r *runner) problem(format string, args ...any) {
	r.res.Problems = append(r.res.Problems, fmt.Sprintf(format, args...))
}

func (r *runner) logf(format string, args ...any) { fmt.Fprintf(r.cfg.Progress, format+"\n", args...) }

// call sends a JSON request and decodes the JSON answer.
func (r *runner) call(ctx context.Context, method, path, auth string, body []byte, hdr map[string]string) (int, map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, method, r.cfg.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := r.cfg.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, nil
}

func (r *runner) createSession(ctx context.Context) error {
	now := time.Now().UTC()
	body, _ := json.Marshal(map[string]any{
		"sku_id": 9000, "title": "fault drill", "price_cents": 100, "stock": r.cfg.Stock,
		"per_user_limit": r.cfg.PerUserLimit, "start_at": now.Add(-time.Second).Format(time.RFC3339),
		"end_at": now.Add(time.Hour).Format(time.RFC3339),
	})
	code, out, err := r.call(ctx, "POST", "/admin/v1/sessions", r.cfg.AdminToken, body, nil)
	if err != nil || code != http.StatusCreated {
		return fmt.Errorf("create session: %d %v %v", code, out, err)
	}
	r.res.SessionID = int64(out["id"].(float64))
	code, out, err = r.call(ctx, "POST", fmt.Sprintf("/admin/v1/sessions/%d/preheat", r.res.SessionID), r.cfg.AdminToken, nil, nil)
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("preheat: %d %v %v", code, out, err)
	}
	r.logf("session %d: %d units, %d per shopper", r.res.SessionID, r.cfg.Stock, r.cfg.PerUserLimit)
	return nil
}

// burst sends Users×Tries concurrent orders and returns the accepted ones.
func (r *runner) burst(ctx context.Context) ([]order, error) {
	var mu sync.Mutex
	var won []order
	var wg sync.WaitGroup
	start := make(chan struct{})
	n := r.cfg.Users * r.cfg.Tries
	r.res.Requests = n
	var answered sync.WaitGroup
	answered.Add(n)
	half := make(chan struct{})
	var once sync.Once
	var done int
	path := fmt.Sprintf("/api/v1/sessions/%d/orders", r.res.SessionID)
	for u := 1; u <= r.cfg.Users; u++ {
		user := int64(1_000_000 + u)
		tok, err := r.cfg.IssueToken(r.cfg.JWTSecret, user, time.Hour, time.Now())
		if err != nil {
			return nil, err
		}
		for i := 0; i < r.cfg.Tries; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer answered.Done()
				<-start
				code, out, err := r.call(ctx, "POST", path, tok, []byte(`{"quantity":1}`), nil)
				mu.Lock()
				defer mu.Unlock()
				done++
				if done >= n/4 {
					once.Do(func() { close(half) })
				}
				switch {
				case err != nil:
					r.res.Refusals["transport error"]++
				case code == http.StatusAccepted:
					won = append(won, order{user: user, token: tok, no: out["order_no"].(string)})
				default:
					r.res.Refusals[fmt.Sprintf("%d %v", code, out["code"])]++
				}
			}()
		}
	}
	close(start)
	if r.cfg.DuringBurst != nil {
		<-half
		r.logf("burst in flight: breaking something")
		r.cfg.DuringBurst()
	}
	wg.Wait()
	if r.cfg.AfterBurst != nil {
		r.logf("burst answered: bringing it back")
		r.cfg.AfterBurst()
	}
	r.res.Accepted = len(won)
	r.logf("burst: %d requests, %d accepted, refusals %v", n, len(won), r.res.Refusals)
	seen := map[string]bool{}
	perUser := map[int64]int{}
	for _, o := range won {
		if seen[o.no] {
			r.problem("order number %s accepted twice", o.no)
		}
		seen[o.no] = true
		perUser[o.user]++
		if perUser[o.user] > r.cfg.PerUserLimit {
			r.problem("user %d accepted %d times, limit %d", o.user, perUser[o.user], r.cfg.PerUserLimit)
		}
	}
	if len(won) > r.cfg.Stock {
		r.problem("oversold: %d accepted for %d units", len(won), r.cfg.Stock)
	}
	if n >= 2*r.cfg.Stock && len(won) != r.cfg.Stock {
		r.problem("demand was %d for %d units but %d were accepted", n, r.cfg.Stock, len(won))
	}
	sort.Slice(won, func(i, j int) bool { return won[i].no < won[j].no })
	return won, nil
}

// waitStatus polls an order until it has one of want.
func (r *runner) waitStatus(ctx context.Context, o order, want ...seckill.Status) (seckill.Status, error) {
	deadline := time.Now().Add(r.cfg.Settle)
	var last string
	for time.Now().Before(deadline) {
		_, out, err := r.call(ctx, "GET", "/api/v1/orders/"+o.no, o.token, nil, nil)
		if err == nil {
			last, _ = out["status"].(string)
			for _, w := range want {
				if last == string(w) {
					return w, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return seckill.Status(last), fmt.Errorf("order %s still %q after %s, want %v", o.no, last, r.cfg.Settle, want)
}

func (r *runner) pay(ctx context.Context, o order, paymentID string) (int, error) {
	body, _ := json.Marshal(map[string]any{"event_id": "evt_" + paymentID, "payment_id": paymentID,
		"order_no": o.no, "amount_cents": 100, "status": "SUCCEEDED"})
	code, _, err := r.call(ctx, "POST", "/api/v1/payments/webhook", "", body,
		map[string]string{seckill.HeaderSignature: seckill.SignWebhook(r.cfg.WebhookSecret, time.Now(), body)})
	return code, err
}

// settle brings every accepted order to WAIT_PAY, then pays part and
// cancels the rest, and pays one cancelled order late.
func (r *runner) settle(ctx context.Context, won []order) error {
	for _, o := range won {
		if _, err := r.waitStatus(ctx, o, seckill.StatusWaitPay); err != nil {
			r.problem("accepted order never reached WAIT_PAY: %v", err)
			return nil
		}
	}
	r.logf("all %d accepted orders are WAIT_PAY", len(won))
	nPay := int(float64(len(won)) * r.cfg.PayRatio)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	for i, o := range won {
		if i < nPay {
			code, err := r.pay(ctx, o, fmt.Sprintf("drill_%s_%d", stamp, i))
			if err != nil || code != http.StatusOK {
				r.problem("payment of %s answered %d %v", o.no, code, err)
			}
			continue
		}
		code, _, err := r.call(ctx, "POST", "/api/v1/orders/"+o.no+"/cancel", o.token, nil, nil)
		if err != nil || code != http.StatusAccepted {
			r.problem("cancel of %s answered %d %v", o.no, code, err)
		}
	}
	for i, o := range won {
		want := seckill.StatusClosed
		if i < nPay {
			want = seckill.StatusPaid
		}
		if got, err := r.waitStatus(ctx, o, want); err != nil {
			r.problem("order %s: %v (got %s)", o.no, err, got)
		}
	}
	r.res.Paid, r.res.Cancelled = nPay, len(won)-nPay
	r.logf("%d paid, %d cancelled", r.res.Paid, r.res.Cancelled)
	if nPay < len(won) {
		late := won[len(won)-1]
		r.res.LateOrder = late.no
		code, err := r.pay(ctx, late, "drill_late_"+stamp)
		if err != nil || (code != http.StatusOK && code != http.StatusServiceUnavailable) {
			r.problem("late payment answered %d %v", code, err)
		}
		if _, err := r.waitStatus(ctx, late, seckill.StatusRefundPending, seckill.StatusRefunded); err != nil {
			r.problem("late payment: %v", err)
		}
		r.logf("late payment on %s recorded for refund", late.no)
	}
	return nil
}

// check waits for the releases to finish and reads the reconcile report.
func (r *runner) check(ctx context.Context) error {
	path := fmt.Sprintf("/admin/v1/sessions/%d/reconcile", r.res.SessionID)
	deadline := time.Now().Add(r.cfg.Settle)
	for {
		code, out, err := r.call(ctx, "GET", path, r.cfg.AdminToken, nil, nil)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("reconcile: %d %v", code, err)
		}
		r.res.Report = out
		if inFlight, _ := out["in_flight"].(float64); inFlight == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	rep := r.res.Report
	if ok, _ := rep["ok"].(bool); !ok {
		r.problem("reconcile: %v", rep["problems"])
	}
	if v, _ := rep["in_flight"].(float64); v != 0 {
		r.problem("%v reservations still in flight", v)
	}
	orders, _ := rep["orders"].(map[string]any)
	count := func(s seckill.Status) int { v, _ := orders[string(s)].(float64); return int(v) }
	if got := count(seckill.StatusPaid); got != r.res.Paid {
		r.problem("%d PAID orders, %d paid", got, r.res.Paid)
	}
	closed := count(seckill.StatusClosed) + count(seckill.StatusRefundPending) + count(seckill.StatusRefunded)
	if closed != r.res.Cancelled {
		r.problem("%d closed orders, %d cancelled", closed, r.res.Cancelled)
	}
	if got, want := int(rep["db_stock"].(float64)), r.cfg.Stock-r.res.Paid; got != want {
		r.problem("db_stock %d, want %d", got, want)
	}
	if got, want := int(rep["redis_stock"].(float64)), r.cfg.Stock-r.res.Paid; got != want {
		r.problem("redis_stock %d, want %d", got, want)
	}
	return nil
}
