package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/client"
)

// Reserved is a reserved sale (预约) measured end to end (--registrations
// N): N distinct shoppers register through the API while its window is
// open, at the run's concurrency, with the load loop that sends the
// bursts; at its start the run's shoppers, registrants and others mixed,
// buy at it as at a step's sale. The registrations and the burst run in
// the same run, side by side, so their ratio survives a noisy machine
// where their absolute rates do not.
type Reserved struct {
	SessionID int64 `json:"session_id"`
	// Registrations is N; Registered how many were answered 201.
	Registrations int `json:"registrations"`
	Registered    int `json:"registered"`
	// Refused counts every other answer by its error code (CONFLICT: the
	// window closed before the bench was done; "again": 200, registered
	// already; "error": no answer).
	Refused map[string]int `json:"refused,omitempty"`
	// Seconds runs from the first registration sent to the last answer;
	// PerSecond is Registered over it. P50Ms and P99Ms are the
	// registrations' latency.
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	// WindowSeconds is the registration window the sale was given: the
	// start is that long after its creation (--registration-window, or
	// registrationMargin × what a pilot's pace needs: PilotRegistrations
	// at PilotPerSecond on a sale of their own, ended afterwards).
	WindowSeconds      float64 `json:"window_seconds"`
	PilotRegistrations int     `json:"pilot_registrations,omitempty"`
	PilotPerSecond     float64 `json:"pilot_per_second,omitempty"`
	// PreheatSeconds is the admin preheat after the registrations, which
	// copies every registrant from MySQL into the set admission checks.
	PreheatSeconds float64 `json:"preheat_seconds"`
	// What the registrations weigh (absent without Config.Stores): rows
	// in MySQL, and the members and MEMORY USAGE of Redis's registrant set.
	MySQLRows    int64 `json:"mysql_rows,omitempty"`
	RedisMembers int64 `json:"redis_members,omitempty"`
	RedisBytes   int64 `json:"redis_bytes,omitempty"`
	// NotEligible counts the burst's requests refused as not registered
	// (403 NOT_ELIGIBLE; after the sell-out an API answers SOLD_OUT first).
	NotEligible int `json:"not_eligible"`
	// RegistrationsVsBurst is PerSecond over the burst's requests/s
	// (Step.Throughput); BurstVsFirstCome the burst's requests/s over the
	// last first-come step's.
	RegistrationsVsBurst float64 `json:"registrations_vs_burst"`
	BurstVsFirstCome     float64 `json:"burst_vs_first_come,omitempty"`
	// Step is the sale's burst, sold-out burst, winners and invariants.
	Step Step `json:"step"`
}

// The registration window, when the bench estimates it: the pilot's pace
// with this margin (the registrations slow as the table and the set grow,
// and the machine is shared), plus slack for the preheat.
const (
	registrationMargin = 2.0
	registrationSlack  = 3 * time.Second
	// pilotWindow is the pilot sale's window; the sale is ended once the
	// pilot is done.
	pilotWindow = 10 * time.Minute
)

// registrantOf is the user id of registrant k: every other user from the
// run's first shopper on, so that shopper i registered when i is even and
// i/2 < N, and the burst meets registrants and others alike.
func registrantOf(shoppers []shopper) func(k int) int64 {
	first := shoppers[0].user
	return func(k int) int64 { return first + 2*int64(k) }
}

// measureReserved runs the reserved sale: the window (a pilot's pace, or
// the configured one), the sale, the registrations, the preheat, what they
// weigh, then at the start the step's bursts and followers.
func measureReserved(ctx context.Context, cfg Config, c *httpClient, admin *client.Client, shoppers []shopper, rep *Report, cpu *serverCPU, level, conc int) (*Reserved, error) {
	n := cfg.Registrations
	user := registrantOf(shoppers)
	// Which of the burst's registrants did register: the tally checks that
	// they, and only they, were admitted.
	registered := make([]bool, min(n, (len(shoppers)+1)/2))
	r := &stepRunner{cfg: cfg, c: c, api: admin, shoppers: shoppers, rep: rep, cpu: cpu, label: "reserved ",
		eligible: func(i int) bool { return i%2 == 0 && i/2 < len(registered) && registered[i/2] }}
	r.newStep(level)
	r.step.Sale = "reserved"
	res := &Reserved{Registrations: n}

	window, pilot, err := r.window(ctx, n, conc, user)
	if err != nil {
		return nil, err
	}
	if pilot != nil {
		res.PilotRegistrations, res.PilotPerSecond = pilot.created, pilot.perSecond()
	}
	res.WindowSeconds = window.Seconds()
	id, start, err := r.createRegistering(ctx, seckill.ModeReserved, window)
	if err != nil {
		return nil, err
	}
	r.step.SessionID, res.SessionID = id, id
	fmt.Fprintf(cfg.Progress, "reserved sale %d: %d registrations at c=%d, window %.1f s\n", id, n, conc, window.Seconds())
	reg := r.registerAll(ctx, id, n, conc, user, registered)
	res.Registered, res.Refused, res.Seconds, res.PerSecond = reg.created, reg.refused, reg.seconds, reg.perSecond()
	res.P50Ms, res.P99Ms = latencyPercentiles(reg.lat)
	reg.lat = nil // a million latencies: let them go before the burst
	fmt.Fprintf(cfg.Progress, "reserved sale %d: %d registered in %.1f s (%.0f/s, p50 %.1f ms, p99 %.1f ms), %d refused\n",
		id, res.Registered, res.Seconds, res.PerSecond, res.P50Ms, res.P99Ms, n-res.Registered)
	if res.Registered < n {
		r.problem("%d of %d registrations failed: %v", n-res.Registered, n, res.Refused)
	}
	if res.Registered == 0 {
		return nil, fmt.Errorf("reserved sale %d: no registration succeeded (%v)", id, res.Refused)
	}

	t0 := time.Now()
	if _, err := admin.Preheat(ctx, id, false); err != nil {
		return nil, fmt.Errorf("reserved sale %d: preheat: %w", id, err)
	}
	res.PreheatSeconds = time.Since(t0).Seconds()
	if s := cfg.Stores; s != nil {
		if err := s.weigh(ctx, id, res); err != nil {
			return nil, fmt.Errorf("reserved sale %d: %w", id, err)
		}
	}
	fmt.Fprintf(cfg.Progress, "reserved sale %d: preheated in %.1f s; MySQL rows %d, Redis set %d members, %d bytes; on sale in %.1f s\n",
		id, res.PreheatSeconds, res.MySQLRows, res.RedisMembers, res.RedisBytes, time.Until(start).Seconds())
	select {
	case <-time.After(time.Until(start)):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	st, err := r.sell(ctx)
	if err != nil {
		return nil, err
	}
	res.Step, res.NotEligible = *st, st.Funnel.NotEligible
	if v, ok := div(res.PerSecond, st.Throughput); ok {
		res.RegistrationsVsBurst = v
	}
	if len(rep.Steps) > 0 {
		res.BurstVsFirstCome, _ = div(st.Throughput, rep.Steps[len(rep.Steps)-1].Throughput)
	}
	return res, nil
}

// window is the registration window of a sale that n shoppers register
// for at conc: Config.RegistrationWindow, or registrationMargin × what a
// pilot's pace needs (the pilot is returned) plus registrationSlack.
func (r *stepRunner) window(ctx context.Context, n, conc int, user func(int) int64) (time.Duration, *registrations, error) {
	if w := r.cfg.RegistrationWindow; w > 0 {
		return w, nil, nil
	}
	pilot, err := r.pilot(ctx, min(n, max(2000, 10*conc)), conc, user)
	if err != nil {
		return 0, nil, err
	}
	return time.Duration(registrationMargin*float64(n)/pilot.perSecond()*float64(time.Second)) + registrationSlack, pilot, nil
}

// pilot registers p shoppers for a reserved sale of its own, ended
// afterwards, for the pace the measured sale's window is sized by. It
// also warms the registration path, as the warm-up step warms the bursts.
func (r *stepRunner) pilot(ctx context.Context, p, conc int, user func(int) int64) (*registrations, error) {
	id, _, err := r.createRegistering(ctx, seckill.ModeReserved, pilotWindow)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(r.cfg.Progress, "reserved sale: pilot of %d registrations on sale %d, for the window\n", p, id)
	reg := r.registerAll(ctx, id, p, conc, user, nil)
	if _, err := r.api.EndSession(ctx, id, client.ChangeOptions{}); err != nil {
		return nil, fmt.Errorf("end the pilot sale %d: %w", id, err)
	}
	if reg.created == 0 {
		return nil, fmt.Errorf("pilot sale %d: no registration succeeded (%v)", id, reg.refused)
	}
	return reg, nil
}

// createRegistering creates a sale of the given mode (reserved or draw)
// and the step's stock whose registration opens now and closes at its
// start, window from now. A reserved sale is preheated by the bench once
// the registrations are in; a draw is drawn by its session's workflow at
// the start.
func (r *stepRunner) createRegistering(ctx context.Context, mode seckill.SessionMode, window time.Duration) (int64, time.Time, error) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	start := now.Add(window)
	body, err := json.Marshal(map[string]any{"sku_id": 7100, "title": "bench " + string(mode), "price_cents": priceCents,
		"stock": r.cfg.Stock, "per_user_limit": r.cfg.Limit, "start_at": start, "end_at": start.Add(2 * time.Hour),
		"mode": mode, "register_from": now.Add(-time.Second), "register_until": start})
	if err != nil {
		return 0, time.Time{}, err
	}
	code, raw, _, err := r.c.do(http.MethodPost, "/admin/v1/sessions", "Bearer "+r.cfg.AdminToken, body)
	if err == nil && code != http.StatusCreated {
		err = fmt.Errorf("%d %s", code, raw)
	}
	var v seckill.SessionView
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err != nil || v.Session == nil {
		return 0, time.Time{}, fmt.Errorf("create a %s sale: %v (is the API at %s, with this admin token?)", mode, err, r.cfg.BaseURL)
	}
	if mode == seckill.ModeDraw {
		return v.ID, start, r.awaitCommitment(ctx, v.ID)
	}
	return v.ID, start, nil
}

// awaitCommitment waits until a draw shows its commitment: registration
// opens with it, once a worker holding SECKILL_DRAW_KEY sealed the seed.
func (r *stepRunner) awaitCommitment(ctx context.Context, id int64) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(100 * time.Millisecond) {
		code, raw, _, err := r.c.do(http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", id), "", nil)
		var v seckill.SessionView
		if err == nil && code == http.StatusOK && json.Unmarshal(raw, &v) == nil && v.Session != nil && v.DrawCommitment != "" {
			return nil
		}
	}
	return fmt.Errorf("draw sale %d shows no commitment after 30 s: is a worker with SECKILL_DRAW_KEY running?", id)
}

// registrations are the answers of one registration loop.
type registrations struct {
	created int
	refused map[string]int
	seconds float64
	lat     []float64 // ms, one per registration
}

func (g *registrations) perSecond() float64 {
	v, _ := div(float64(g.created), g.seconds)
	return v
}

// registerAll registers users user(0) … user(n−1) for the sale through
// the API, conc at a time. Each shopper's token is minted as its turn
// comes: a million tokens are never held at once. ok, when not nil,
// records which of the first len(ok) registered.
func (r *stepRunner) registerAll(ctx context.Context, sessionID int64, n, conc int, user func(int) int64, ok []bool) *registrations {
	g := &registrations{refused: map[string]int{}, lat: make([]float64, n)}
	path := fmt.Sprintf("/api/v1/sessions/%d/registrations", sessionID)
	var created, done atomic.Int64
	var mu sync.Mutex
	refuse := func(code string) {
		mu.Lock()
		g.refused[code]++
		mu.Unlock()
	}
	stop := r.progress("registrations", &done, n)
	start := time.Now()
	_, _ = closedLoop(conc, n, func(k int) error {
		defer done.Add(1)
		if ctx.Err() != nil {
			refuse("error")
			return nil
		}
		tok, err := auth.IssueToken(r.cfg.JWTSecret, user(k), 2*time.Hour, time.Now())
		if err != nil {
			refuse("error")
			return nil
		}
		t0 := time.Now()
		code, raw, _, err := r.c.do(http.MethodPost, path, "Bearer "+tok, nil)
		g.lat[k] = float64(time.Since(t0).Microseconds()) / 1000
		switch {
		case err != nil:
			refuse("error")
		case code == http.StatusCreated:
			created.Add(1)
			if k < len(ok) {
				ok[k] = true
			}
		case code == http.StatusOK:
			refuse("again")
		default:
			var e seckill.ErrorBody
			_ = json.Unmarshal(raw, &e)
			refuse(e.Code)
		}
		return nil
	})
	g.seconds = time.Since(start).Seconds()
	stop()
	g.created = int(created.Load())
	if len(g.refused) == 0 {
		g.refused = nil
	}
	return g
}
