package drill

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/seckill/seckill"
)

// burstRetries is how often an attempt retries an undecided answer during
// the burst, as an impatient shopper would; what is still undecided then
// is resolved once the fault is gone.
const burstRetries = 3

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
