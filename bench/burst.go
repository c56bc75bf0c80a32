package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
)

// result is one request's fate.
type result struct {
	at      time.Duration // since the burst began
	latency time.Duration
	outcome string
	orderNo string
	shopper int
	// requestID is an accepted purchase's X-Request-ID (its trace id).
	requestID string
}

// burst sends n requests of the shoppers, shuffled, at the level's load
// (keyed: each with a fresh Idempotency-Key, a UUIDv7 stamped as it is
// sent), each shopper with a token signed for this burst (freshTokens),
// and returns every request's result and the wall time.
func (r *stepRunner) burst(ctx context.Context, level int, name string, keyed bool, n int) ([]result, time.Duration, error) {
	order := make([]int, n)
	for i := range order {
		order[i] = i % r.cfg.Users
	}
	auths, err := freshTokens(r.cfg.JWTSecret, r.shoppers[:min(n, len(r.shoppers))])
	if err != nil {
		return nil, 0, err
	}
	rand.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	path := fmt.Sprintf("/api/v1/sessions/%d/orders", r.step.SessionID)
	bodies := [][]byte{[]byte(fmt.Sprintf(`{"quantity":%d}`, r.cfg.Quantity))}
	if r.items > 1 {
		bodies = make([][]byte, r.items)
		for i := range bodies {
			bodies[i] = []byte(fmt.Sprintf(`{"sku_id":%d,"quantity":%d}`, itemSKU(i), r.cfg.Quantity))
		}
	}
	results := make([]result, n)
	var sent, done atomic.Int64
	// The sale's page, read once before the clock starts, as shoppers read
	// it before the sale opens: the stack's API loads a session it has not
	// seen from MySQL, and every request of the burst's first wave (all of
	// its winners) waited for that load, which the admission-only API,
	// whose sessions are in memory, never made them wait for.
	_, _, _, _ = r.c.do("GET", fmt.Sprintf("/api/v1/sessions/%d", r.step.SessionID), "", nil)
	if r.cfg.Rate <= 0 {
		r.c.warm(level)
	}
	start := time.Now()
	r.burstStart = start
	one := func(i int) {
		var header []string
		if keyed {
			// Stamped as it is sent, as the shop page stamps a click's
			// key: in a sale's first second most keys are stamped before
			// its last win plus the clock skew, and may have won.
			header = []string{api.HeaderIdempotencyKey, uuid.Must(uuid.NewV7()).String()}
		}
		s := r.shoppers[order[i]]
		s.auth = auths[order[i]]
		results[i] = r.purchase(path, s, bodies[i%len(bodies)], start, header...)
		done.Add(1)
	}
	if r.start.IsZero() {
		r.start = start
	}
	stop := r.progress(name, &done, n)
	var wg sync.WaitGroup
	if r.cfg.Rate > 0 {
		// Open loop: arrivals on a clock, whatever the answers do.
		interval := time.Second / time.Duration(level)
		sem := make(chan struct{}, 20000)
		for i := 0; i < n && ctx.Err() == nil; i++ {
			if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
				time.Sleep(d)
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() { defer wg.Done(); defer func() { <-sem }(); one(i) }()
		}
	} else {
		for w := 0; w < level; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					i := int(sent.Add(1)) - 1
					if i >= n {
						return
					}
					one(i)
				}
			}()
		}
	}
	wg.Wait()
	dur := time.Since(start)
	stop()
	return results[:int(done.Load())], dur, nil
}

// tokenRound tells one burst's tokens from the last one's: a token's
// times are whole seconds, and two bursts may start within one.
var tokenRound atomic.Int64

// freshTokens signs each of shoppers a token of its own for one burst, as
// a real sale's first clicks carry tokens no API process has verified
// yet. With the same tokens burst after burst, an API that had just seen
// them (the admission-only API sells five bursts in a row, seconds apart)
// answered from its memory of verified tokens (a minute), while the
// stack's API, a round later, mostly did not: the two were not measured
// alike. Signing comes before the burst's clock starts.
func freshTokens(secret []byte, shoppers []shopper) ([]string, error) {
	ttl := 2*time.Hour + time.Duration(tokenRound.Add(1))*time.Second
	now := time.Now()
	out := make([]string, len(shoppers))
	for i, s := range shoppers {
		tok, err := auth.IssueToken(secret, s.user, ttl, now)
		if err != nil {
			return nil, err
		}
		out[i] = "Bearer " + tok
	}
	return out, nil
}

// purchase sends one purchase of shopper s (header: name, value pairs)
// and returns its result, timed from start.
func (r *stepRunner) purchase(path string, s shopper, body []byte, start time.Time, header ...string) result {
	t0 := time.Now()
	code, raw, layer, id, err := r.c.send("POST", path, s.auth, body, header...)
	res := result{at: t0.Sub(start), latency: time.Since(t0), shopper: s.index, outcome: classify(code, raw, layer, err)}
	if res.outcome == OutAccepted {
		res.requestID = id
		var v struct {
			OrderNo string `json:"order_no"`
		}
		_ = json.Unmarshal(raw, &v)
		res.orderNo = v.OrderNo
	}
	return res
}

// progress prints a progress line every half second until stopped, then
// the requests answered and their pace.
func (r *stepRunner) progress(name string, done *atomic.Int64, n int) func() {
	quit := make(chan struct{})
	began := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				// Each slice's own pace, to read how a step's slices move.
				fmt.Fprintf(r.cfg.Progress, "\r  %s %s: %d/%d answered, %.0f req/s\n", r.levelName(), name, done.Load(), n,
					float64(done.Load())/time.Since(began).Seconds())
				return
			case <-t.C:
				fmt.Fprintf(r.cfg.Progress, "\r  %s %s: %d/%d answered", r.levelName(), name, done.Load(), n)
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}
