// Package drill is the fault drill operators run before a real sale (and
// the tests run in CI): against a running stack, through its public HTTP
// API, it creates a session, bursts far more shoppers than stock at it, lets
// the caller break something in the middle (kill the worker, cut or slow
// MySQL, Redis or Temporal), pays part of the orders through signed
// webhooks, cancels or times out the rest, pays one closed order late, and
// checks the invariants: exactly the stock sold, nobody over the limit, no
// order lost or doubled, every unpaid unit back, the late payment refunded
// or waiting for it.
//
// It shops as a careful client does: one Idempotency-Key per purchase
// attempt, and an answer it cannot know (503, a network error) is retried
// with the same key until it is decided. At the end it holds every answer
// against the truth in MySQL: every 202 became exactly one order of that
// shopper, no order exists that nobody was told about (every 409 holds
// nothing), and each key the admission script decided gives, asked again
// after the sale, the same answer.
package drill

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
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
	Tries         int // concurrent purchase attempts per shopper, a key each
	// Ramp spreads the attempts' first requests evenly over this long (0:
	// all at once), so that a fault started mid-burst still meets stock
	// left to sell.
	Ramp time.Duration
	// FaultAfter is the share of attempts answered before DuringBurst runs
	// (default 0.25); FaultAt, when set, runs it that long after the burst
	// starts instead (the first answers of a fresh session can come all at
	// once, late: a share answered says little about what is in flight).
	FaultAfter float64
	FaultAt    time.Duration
	PayRatio   float64
	// PayTimeout is the stack's SECKILL_PAY_TIMEOUT when it is short
	// (seconds): then part of the unpaid orders are left to time out (the
	// compensation path) and a payment may lose its race with the timeout
	// (refunded, never both). Zero means orders wait longer than the drill
	// runs: every payment must win and the rest are cancelled.
	PayTimeout time.Duration
	// Settle bounds each wait (orders reaching WAIT_PAY, PAID, CLOSED, an
	// unknown answer resolving).
	Settle time.Duration
	// DuringBurst runs while the burst is in flight (break something);
	// AfterBurst once every attempt has a first answer (bring it back);
	// DuringSettle once every order has a row, before payments and
	// cancels (slow MySQL during compensation).
	DuringBurst, AfterBurst, DuringSettle func()
	// Owners reads the truth: the owner of every order row of a session,
	// by order number (the MySQL store's OrderOwners). Without it the
	// checks against MySQL are skipped.
	Owners func(ctx context.Context, sessionID int64) (map[string]int64, error)
	// IssueToken mints a shopper token (the api package's IssueToken).
	IssueToken func(secret []byte, user int64, ttl time.Duration, now time.Time) (string, error)
	// HTTP sends the requests (client.NewHTTPClient(30s) when nil).
	HTTP     *http.Client
	Progress io.Writer
}

// Result is what the drill saw.
type Result struct {
	SessionID int64          `json:"session_id"`
	Requests  int            `json:"requests"` // HTTP requests sent to buy, retries and replays included
	Attempts  int            `json:"attempts"` // purchase attempts (keys)
	Accepted  int            `json:"accepted"`
	Refusals  map[string]int `json:"refusals"`
	// Unknown counts attempts that got an undecided answer (503 or a
	// network error) at least once; Resolved those whose key later gave
	// the truth (all of them, or a problem is reported).
	Unknown   int             `json:"unknown"`
	Resolved  int             `json:"resolved"`
	Unknowns  map[string]int  `json:"unknown_answers"` // undecided answers by kind
	Orders    int             `json:"orders"`          // order rows in MySQL (-1 when not read)
	Paid      int             `json:"paid"`            // orders that ended PAID
	Cancelled int             `json:"cancelled"`
	TimedOut  int             `json:"timed_out"`
	Refunds   int             `json:"refunds"` // payments that lost their order (late or racing the timeout)
	LateOrder string          `json:"late_payment_order,omitempty"`
	Report    *seckill.Report `json:"reconcile"`
	Problems  []string        `json:"problems"`
	OK        bool            `json:"ok"`
}

type runner struct {
	cfg Config
	api *client.Client // admin and payment provider
	mu  sync.Mutex
	res *Result
}

// Run runs the drill. An error means the drill could not run; a drill that
// ran and found broken invariants returns a Result with OK false.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	r := newRunner(cfg)
	r.res = &Result{Refusals: map[string]int{}, Unknowns: map[string]int{}, Problems: []string{}, Orders: -1}
	if err := r.createSession(ctx); err != nil {
		return nil, err
	}
	attempts, err := r.burst(ctx)
	if err != nil {
		return nil, err
	}
	won := r.accepted(attempts)
	if err := r.settle(ctx, won); err != nil {
		return nil, err
	}
	r.replay(ctx, attempts)
	if err := r.check(ctx, attempts); err != nil {
		return nil, err
	}
	r.res.OK = len(r.res.Problems) == 0
	return r.res, nil
}

func (r *runner) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Problems = append(r.res.Problems, fmt.Sprintf(format, args...))
}

func (r *runner) logf(format string, args ...any) { fmt.Fprintf(r.cfg.Progress, format+"\n", args...) }

// newRunner fills cfg's defaults and makes the API client.
func newRunner(cfg Config) *runner {
	if cfg.HTTP == nil {
		cfg.HTTP = client.NewHTTPClient(30 * time.Second)
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 2 * time.Minute
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	return &runner{cfg: cfg, api: &client.Client{BaseURL: cfg.BaseURL, HTTP: cfg.HTTP, AdminToken: cfg.AdminToken,
		WebhookSecret: cfg.WebhookSecret, PollInterval: 100 * time.Millisecond}}
}

// status is the HTTP status of a call's outcome: ok when it succeeded, the
// answer's when the API refused, 0 with the error when it was not reached.
func status(ok int, err error) (int, error) {
	switch code := client.StatusCode(err); {
	case code != 0:
		return code, nil
	case err != nil:
		return 0, err
	}
	return ok, nil
}

func (r *runner) createSession(ctx context.Context) error {
	now := time.Now().UTC()
	sess, err := r.api.CreateSession(ctx, &seckill.Session{SKUID: 9000, Title: "fault drill", PriceCents: 100,
		TotalStock: r.cfg.Stock, PerUserLimit: r.cfg.PerUserLimit, StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour)})
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	r.res.SessionID = sess.ID
	// Preheating is idempotent: retried while the API cannot reach Redis.
	code, err := r.until(ctx, "preheat", func() (int, error) {
		_, err := r.api.Preheat(ctx, r.res.SessionID, false)
		return status(http.StatusOK, err)
	})
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("preheat: %d %v", code, err)
	}
	r.logf("session %d: %d units, %d per shopper", r.res.SessionID, r.cfg.Stock, r.cfg.PerUserLimit)
	return nil
}

// until repeats a request while the API answers 5xx (or the network
// fails), as a payment provider or a shop page does, and returns the last
// status. Only 503 is the answer of an API that cannot decide now; any
// other 5xx is reported (an error the API did not map), then retried like
// a provider would.
func (r *runner) until(ctx context.Context, what string, send func() (int, error)) (int, error) {
	deadline := time.Now().Add(r.cfg.Settle)
	reported := false
	for {
		code, err := send()
		if err == nil && code >= 500 && code != http.StatusServiceUnavailable && !reported {
			r.problem("%s answered %d: an outage must be 503 UNAVAILABLE", what, code)
			reported = true
		}
		if (err == nil && code < 500) || time.Now().After(deadline) {
			return code, err
		}
		select {
		case <-ctx.Done():
			return code, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
