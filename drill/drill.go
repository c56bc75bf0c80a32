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
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/sandbox"
)

// A keyed purchase must never be answered from the API's in-memory
// sold-out flag (the layer header, api.HeaderLayer): that answer pins
// nothing, so the same key could buy once stock is back. The admission
// script answers keyed requests, and pins its SOLD_OUT.
const layerSoldOutMemory = "soldout_memory"

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

type order struct {
	user int64
	api  *client.Client // the shopper's
	no   string
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

type runner struct {
	cfg Config
	api *client.Client // admin and payment provider
	mu  sync.Mutex
	res *Result
}

// burstRetries is how often an attempt retries an undecided answer during
// the burst, as an impatient shopper would; what is still undecided then
// is resolved once the fault is gone.
const burstRetries = 3

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

// burst sends Users×Tries concurrent purchase attempts, each with its own
// key, and resolves every undecided answer with its key.
func (r *runner) burst(ctx context.Context) ([]*attempt, error) {
	var attempts []*attempt
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	for u := 1; u <= r.cfg.Users; u++ {
		user := int64(1_000_000 + u)
		tok, err := r.cfg.IssueToken(r.cfg.JWTSecret, user, time.Hour, time.Now())
		if err != nil {
			return nil, err
		}
		for i := 0; i < r.cfg.Tries; i++ {
			attempts = append(attempts, &attempt{user: user, api: r.api.WithToken(tok), key: fmt.Sprintf("drill-%s-%d-%d", stamp, user, i)})
		}
	}
	n := len(attempts)
	r.res.Attempts = n
	var wg sync.WaitGroup
	start := make(chan struct{})
	faultAt := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	done := 0
	deadline := time.Now().Add(r.cfg.Settle)
	trigger := max(1, int(float64(n)*r.cfg.FaultAfter))
	if r.cfg.FaultAfter <= 0 {
		trigger = max(1, n/4)
	}
	for i, a := range attempts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if r.cfg.Ramp > 0 {
				time.Sleep(r.cfg.Ramp * time.Duration(i) / time.Duration(n))
			}
			a.final = r.ask(ctx, a, burstRetries, deadline)
			mu.Lock()
			defer mu.Unlock()
			if done++; done >= trigger {
				once.Do(func() { close(faultAt) })
			}
		}()
	}
	close(start)
	if r.cfg.DuringBurst != nil {
		if r.cfg.FaultAt > 0 {
			<-time.After(r.cfg.FaultAt)
		} else {
			<-faultAt
		}
		r.logf("burst in flight: breaking something")
		r.cfg.DuringBurst()
	}
	wg.Wait()
	if r.cfg.AfterBurst != nil {
		r.logf("burst answered: bringing it back")
		r.cfg.AfterBurst()
	}
	// Resolve: every attempt still undecided asks again with its key until
	// the API knows.
	deadline = time.Now().Add(r.cfg.Settle)
	for _, a := range attempts {
		if a.final.unknown() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.final = r.ask(ctx, a, 0, deadline)
			}()
		}
	}
	wg.Wait()
	for _, a := range attempts {
		switch {
		case a.final.unknown():
			r.problem("attempt %s of user %d never got a decided answer (last: %s %v)", a.key, a.user, a.final, a.final.err)
		case a.sawUnknown:
			r.res.Resolved++
		}
		if a.sawUnknown {
			r.res.Unknown++
		}
		switch {
		case a.final.status == http.StatusAccepted:
			if a.final.orderNo == "" {
				r.problem("attempt %s: 202 without an order number", a.key)
			}
		case a.final.unknown():
		case a.final.status == http.StatusConflict && (a.final.code == string(seckill.ESOLDOUT) || a.final.code == string(seckill.ELIMIT)):
			r.res.Refusals[a.final.String()]++
		default:
			r.res.Refusals[a.final.String()]++
			r.problem("attempt %s: unexpected answer %s", a.key, a.final)
		}
	}
	r.logf("burst: %d attempts (%d requests), %d undecided at first and %d resolved, refusals %v, undecided answers %v",
		n, r.res.Requests, r.res.Unknown, r.res.Resolved, r.res.Refusals, r.res.Unknowns)
	return attempts, nil
}

// accepted checks the decided answers among themselves and returns the
// accepted orders.
func (r *runner) accepted(attempts []*attempt) []order {
	var won []order
	seen := map[string]string{}
	perUser := map[int64]int{}
	for _, a := range attempts {
		if a.final.status != http.StatusAccepted || a.final.orderNo == "" {
			continue
		}
		no := a.final.orderNo
		if k, dup := seen[no]; dup {
			r.problem("order number %s answered to two purchases (keys %s and %s)", no, k, a.key)
			continue
		}
		seen[no] = a.key
		won = append(won, order{user: a.user, api: a.api, no: no})
		perUser[a.user]++
		if perUser[a.user] > r.cfg.PerUserLimit {
			r.problem("user %d accepted %d times, limit %d", a.user, perUser[a.user], r.cfg.PerUserLimit)
		}
	}
	r.res.Accepted = len(won)
	// With a short pay timeout, units of orders that timed out during the
	// burst are sold again: more than the stock may be accepted, never
	// more held at once (the reconcile report checks that).
	short := r.cfg.PayTimeout > 0
	if len(won) > r.cfg.Stock && !short {
		r.problem("oversold: %d accepted for %d units", len(won), r.cfg.Stock)
	}
	if n := len(attempts); n >= 2*r.cfg.Stock && (len(won) < r.cfg.Stock || (len(won) > r.cfg.Stock && !short)) {
		r.problem("demand was %d for %d units but %d were accepted", n, r.cfg.Stock, len(won))
	}
	sort.Slice(won, func(i, j int) bool { return won[i].no < won[j].no })
	return won
}

// waitStatus polls an order until it has one of want.
func (r *runner) waitStatus(ctx context.Context, o order, want ...seckill.Status) (seckill.Status, error) {
	wctx, cancel := context.WithTimeout(ctx, r.cfg.Settle)
	defer cancel()
	got, err := o.api.WaitOrder(wctx, o.no, want...)
	if err != nil {
		return "", err
	}
	return got.Status, nil
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

// pay pays an order as its shopper does: the checkout
// (POST /api/v1/orders/{no}/payment), then the sandbox's page, which sends
// the provider's signed webhook. Against a stack with another provider the
// drill stands in for it: it sends the webhook of the checkout's payment
// itself. 409: the order could no longer be paid (closed first).
func (r *runner) pay(ctx context.Context, o order) (int, error) {
	return r.until(ctx, "payment of "+o.no, func() (int, error) {
		co, err := o.api.Checkout(ctx, o.no)
		if err != nil {
			return status(http.StatusCreated, err)
		}
		if co.Provider == sandbox.Name {
			return o.api.PaySandbox(ctx, co.CheckoutURL, false)
		}
		_, err = r.api.Pay(ctx, seckill.Payment{PaymentID: co.PaymentID, OrderNo: o.no, AmountCents: 100})
		return status(http.StatusOK, err)
	})
}

// payLate sends the provider's webhook of a payment made at the last
// moment whose webhook came after the order closed: the late payment that
// must be refunded.
func (r *runner) payLate(ctx context.Context, o order, paymentID string) (int, error) {
	return r.until(ctx, "late payment of "+o.no, func() (int, error) {
		_, err := r.api.Pay(ctx, seckill.Payment{PaymentID: paymentID, OrderNo: o.no, AmountCents: 100})
		return status(http.StatusOK, err)
	})
}

func (r *runner) cancel(ctx context.Context, o order) (int, error) {
	return r.until(ctx, "cancel of "+o.no, func() (int, error) {
		_, err := o.api.Cancel(ctx, o.no)
		return status(http.StatusAccepted, err)
	})
}

// settle brings every accepted order to its row, pays part, cancels part,
// leaves the rest to the pay timeout (when it is short), waits for every
// order's end, and pays one closed order late.
func (r *runner) settle(ctx context.Context, won []order) error {
	short := r.cfg.PayTimeout > 0
	created := []seckill.Status{seckill.StatusWaitPay}
	if short {
		// The timeout may close an order before the drill sees it waiting.
		created = append(created, seckill.StatusClosed)
	}
	for _, o := range won {
		if _, err := r.waitStatus(ctx, o, created...); err != nil {
			r.problem("accepted order never got its row: %v", err)
			return nil
		}
	}
	r.logf("all %d accepted orders have their row", len(won))
	if r.cfg.DuringSettle != nil {
		r.logf("settling: breaking something")
		r.cfg.DuringSettle()
	}
	nPay := int(float64(len(won)) * r.cfg.PayRatio)
	nCancel := len(won) - nPay
	if short {
		nCancel /= 2
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	var wg sync.WaitGroup
	for i, o := range won {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch {
			case i < nPay:
				// 409: the pay timeout closed it before its checkout
				// (short timeouts only).
				if code, err := r.pay(ctx, o); err != nil || (code != http.StatusOK && !(short && code == http.StatusConflict)) {
					r.problem("payment of %s answered %d %v", o.no, code, err)
				}
			case i < nPay+nCancel:
				code, err := r.cancel(ctx, o)
				// 409: the pay timeout closed it first (short timeouts only).
				if err != nil || (code != http.StatusAccepted && !(short && code == http.StatusConflict)) {
					r.problem("cancel of %s answered %d %v", o.no, code, err)
				}
			}
		}()
	}
	wg.Wait()
	ended := []seckill.Status{seckill.StatusPaid, seckill.StatusClosed, seckill.StatusRefundPending, seckill.StatusRefunded, seckill.StatusFailed}
	for i, o := range won {
		got, err := r.waitStatus(ctx, o, ended...)
		if err != nil {
			r.problem("order %s: %v", o.no, err)
			continue
		}
		switch {
		case got == seckill.StatusFailed:
			r.problem("order %s ended FAILED: Redis admitted what MySQL refused", o.no)
		case got == seckill.StatusPaid && i >= nPay:
			r.problem("order %s ended PAID, never paid", o.no)
		case got == seckill.StatusPaid:
			r.res.Paid++
		case i < nPay && !short:
			r.problem("order %s paid but ended %s", o.no, got)
		case i < nPay && got == seckill.StatusClosed:
			r.res.TimedOut++ // closed before its checkout: nothing was paid
		case i < nPay:
			r.res.Refunds++ // the payment lost the race with the timeout
		case i < nPay+nCancel:
			r.res.Cancelled++
		default:
			r.res.TimedOut++
		}
	}
	r.logf("%d paid, %d cancelled, %d timed out, %d payments lost to the timeout", r.res.Paid, r.res.Cancelled, r.res.TimedOut, r.res.Refunds)
	if len(won) > nPay {
		// The last order was never paid: it is closed by now.
		late := won[len(won)-1]
		r.res.LateOrder = late.no
		code, err := r.payLate(ctx, late, "drill_late_"+stamp)
		if err != nil || code != http.StatusOK {
			r.problem("late payment answered %d %v", code, err)
		}
		if _, err := r.waitStatus(ctx, late, seckill.StatusRefundPending, seckill.StatusRefunded); err != nil {
			r.problem("late payment: %v", err)
		}
		r.res.Refunds++
		r.logf("late payment on %s recorded for refund", late.no)
	}
	return nil
}

// replay asks every attempt's key once more, after the sale settled (stock
// given back, orders closed): the same key always gets the same answer.
func (r *runner) replay(ctx context.Context, attempts []*attempt) {
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	deadline := time.Now().Add(r.cfg.Settle)
	for _, a := range attempts {
		if a.final.unknown() {
			continue
		}
		if a.final.layer == layerSoldOutMemory {
			r.problem("key %s of user %d was answered %s from the API's in-memory sold-out flag, which pins nothing", a.key, a.user, a.final)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			again := r.ask(ctx, a, 0, deadline)
			a.replay = again
			switch {
			case again.status == a.final.status && again.orderNo == a.final.orderNo && again.code == a.final.code:
			case a.final.status == http.StatusConflict && again.status == http.StatusAccepted:
				r.problem("key %s of user %d answered %s during the sale, then %s once stock came back: the refusal was not pinned to the key", a.key, a.user, a.final, again)
			default:
				r.problem("key %s of user %d answered %s, then %s", a.key, a.user, a.final, again)
			}
		}()
	}
	wg.Wait()
}

// check holds the answers against MySQL, waits for the releases to finish
// and reads the reconcile report.
func (r *runner) check(ctx context.Context, attempts []*attempt) error {
	if r.cfg.Owners != nil {
		owners, err := r.cfg.Owners(ctx, r.res.SessionID)
		if err != nil {
			return fmt.Errorf("read the orders in MySQL: %w", err)
		}
		r.res.Orders = len(owners)
		told := map[string]int64{}
		for _, a := range attempts {
			if a.final.status == http.StatusAccepted && a.final.orderNo != "" {
				told[a.final.orderNo] = a.user
				switch owner, ok := owners[a.final.orderNo]; {
				case !ok:
					r.problem("202 %s to user %d has no order row", a.final.orderNo, a.user)
				case owner != a.user:
					r.problem("202 %s to user %d: the row belongs to user %d", a.final.orderNo, a.user, owner)
				}
			}
		}
		for _, a := range attempts {
			// An order made by a replay was told then (and the changed
			// answer is already reported).
			if a.replay.status == http.StatusAccepted && a.replay.orderNo != "" {
				told[a.replay.orderNo] = a.user
			}
		}
		for no, user := range owners {
			if _, ok := told[no]; !ok {
				r.problem("order %s of user %d was never answered 202: a unit held for a shopper told otherwise", no, user)
			}
		}
	}

	rep, err := Reconcile(ctx, r.cfg, r.res.SessionID)
	if err != nil {
		return err
	}
	r.res.Report = rep
	if !rep.OK {
		r.problem("reconcile: %v", rep.Problems)
	}
	if rep.InFlight != 0 {
		r.problem("%d reservations still in flight", rep.InFlight)
	}
	if got := rep.Orders[seckill.StatusPaid]; got != r.res.Paid {
		r.problem("%d PAID orders, %d paid", got, r.res.Paid)
	}
	closed := rep.Orders[seckill.StatusClosed] + rep.Orders[seckill.StatusRefundPending] + rep.Orders[seckill.StatusRefunded]
	if want := r.res.Accepted - r.res.Paid; closed != want {
		r.problem("%d closed orders, %d accepted and not paid", closed, want)
	}
	if got, want := rep.DBStock, r.cfg.Stock-r.res.Paid; got != want {
		r.problem("db_stock %d, want %d", got, want)
	}
	if got, want := rep.RedisStock, r.cfg.Stock-r.res.Paid; got != want {
		r.problem("redis_stock %d, want %d", got, want)
	}
	return nil
}

// Reconcile reads a session's reconcile report through the admin API of
// cfg's stack, retrying while the API is unreachable or answers 503 and
// while reservations are in flight, up to cfg.Settle (a soak checks every
// session once its faults are over).
func Reconcile(ctx context.Context, cfg Config, sessionID int64) (*seckill.Report, error) {
	r := newRunner(cfg)
	deadline := time.Now().Add(r.cfg.Settle)
	for {
		rep, err := r.api.Reconcile(ctx, sessionID)
		if err == nil && (rep.InFlight == 0 || time.Now().After(deadline)) {
			return rep, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("reconcile session %d: %w", sessionID, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
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
