package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/temporal"
	"github.com/seckill/seckill/workflows"
)

// Draw is a draw sale (抽签) measured end to end (--draw N): the run's
// shoppers register through the API in its window, its session's
// workflow draws at the start, then each of them asks its registration
// (GET /registration) once, as a shop page does before it offers the buy
// button; the winners buy, and one in drawTriers of the others tries to
// buy anyway. The point is the front door: a first-come sale of the same
// run met a burst of purchases, most of them losers; the draw's losers
// are told LOST by a read, and only the winners' purchases reach the
// admission script and Temporal.
type Draw struct {
	SessionID int64 `json:"session_id"`
	// Units is N, the sale's stock; Registered how many of the run's
	// shoppers registered (201), at RegistrationsPerSecond.
	Units                  int     `json:"units"`
	Registered             int     `json:"registered"`
	RegistrationsPerSecond float64 `json:"registrations_per_second"`
	WindowSeconds          float64 `json:"window_seconds"`
	// DrawSeconds runs from the start to drawn_at (the session shows it
	// once its workflow's draw is done), by the stack's clock.
	DrawSeconds float64 `json:"draw_seconds"`
	// Statuses counts the registrants' answers at GET /registration
	// after the draw (WON, WAITLISTED, LOST).
	Statuses map[string]int `json:"statuses"`
	// The front door at the start: every registrant's GET /registration
	// and the purchases after it, FrontDoorRequests in FrontDoorSeconds,
	// with the latency of all of them (P50Ms, P99Ms) and of the
	// registration reads alone.
	FrontDoorRequests  int     `json:"front_door_requests"`
	FrontDoorSeconds   float64 `json:"front_door_seconds"`
	FrontDoorPerSecond float64 `json:"front_door_per_second"`
	P50Ms              float64 `json:"p50_ms"`
	P99Ms              float64 `json:"p99_ms"`
	RegistrationP50Ms  float64 `json:"registration_p50_ms"`
	RegistrationP99Ms  float64 `json:"registration_p99_ms"`
	// Purchases counts the purchase requests: the winners' and the tries.
	// Tries are non-winners' purchases; NotEligible of them were answered
	// 403 NOT_ELIGIBLE (after the sell-out an API answers SOLD_OUT first).
	Purchases   int `json:"purchases"`
	Tries       int `json:"tries"`
	NotEligible int `json:"not_eligible"`
	// OrderWorkflows counts the order workflows Temporal holds for the
	// sale (its visibility: workflow type, SessionID and the stack's task
	// queue), against Units; -1 when the bench has no Temporal address or
	// task queue.
	OrderWorkflows int64 `json:"order_workflows"`
	// The last first-come step of the run: its burst's requests, their
	// rate and latency, and the purchases each unit drew there and here.
	FirstComeRequests         int     `json:"first_come_requests"`
	FirstComePerSecond        float64 `json:"first_come_per_second"`
	FirstComeAcceptP99Ms      float64 `json:"first_come_accept_p99_ms"`
	PurchasesPerUnit          float64 `json:"purchases_per_unit"`
	FirstComePurchasesPerUnit float64 `json:"first_come_purchases_per_unit"`
	// FrontDoorVsFirstCome is FrontDoorPerSecond over the first-come
	// burst's requests/s.
	FrontDoorVsFirstCome float64 `json:"front_door_vs_first_come,omitempty"`
	// Step is the sale's purchases (funnel, winners' latency), the
	// followers and the invariants.
	Step Step `json:"step"`
}

// drawTriers: one non-winner in this many tries to buy anyway.
const drawTriers = 10

// drawTimeout bounds the wait for the draw once the sale has started.
const drawTimeout = 5 * time.Minute

// measureDraw runs the draw sale of units units: the window, the
// registrations of every shopper of the run, the draw at the start, the
// front door, the followers and the invariants, and counts the order
// workflows Temporal received for it.
func measureDraw(ctx context.Context, cfg Config, c *httpClient, admin *client.Client, shoppers []shopper, rep *Report, cpu *serverCPU, level, conc, units int) (*Draw, error) {
	cfg.Stock, cfg.Quantity, cfg.Limit = units, 1, 1
	won := make([]bool, len(shoppers))
	r := &stepRunner{cfg: cfg, c: c, api: admin, shoppers: shoppers, rep: rep, cpu: cpu, label: "draw ",
		eligible: func(i int) bool { return won[i] }}
	r.newStep(level)
	r.step.Sale = "draw"
	d := &Draw{Units: units, OrderWorkflows: -1}
	user := func(k int) int64 { return shoppers[k].user }
	window, _, err := r.window(ctx, len(shoppers), conc, user)
	if err != nil {
		return nil, err
	}
	d.WindowSeconds = window.Seconds()
	id, start, err := r.createRegistering(ctx, seckill.ModeDraw, window)
	if err != nil {
		return nil, err
	}
	r.step.SessionID, d.SessionID = id, id
	fmt.Fprintf(cfg.Progress, "draw sale %d: %d units, %d shoppers register at c=%d, window %.1f s\n", id, units, len(shoppers), conc, window.Seconds())
	reg := r.registerAll(ctx, id, len(shoppers), conc, user, nil)
	d.Registered, d.RegistrationsPerSecond = reg.created, reg.perSecond()
	reg.lat = nil
	if d.Registered < len(shoppers) {
		r.problem("%d of %d registrations failed: %v", len(shoppers)-d.Registered, len(shoppers), reg.refused)
	}
	fmt.Fprintf(cfg.Progress, "draw sale %d: %d registered at %.0f/s; drawn at the start, in %.1f s\n", id, d.Registered,
		d.RegistrationsPerSecond, time.Until(start).Seconds())
	s, err := waitDrawn(ctx, admin.Session, id, start)
	if err != nil {
		return nil, err
	}
	d.DrawSeconds = s.DrawnAt.Sub(s.StartAt).Seconds()
	fmt.Fprintf(cfg.Progress, "draw sale %d: drawn %.2f s after its start\n", id, d.DrawSeconds)

	r.creating = r.cpu.mark()
	polls, buys, dur := r.frontDoor(ctx, level, won, d)
	r.step.DurationSeconds = dur.Seconds()
	r.tally(buys)
	d.FrontDoorRequests = len(polls) + len(buys)
	d.FrontDoorSeconds = dur.Seconds()
	d.FrontDoorPerSecond = float64(d.FrontDoorRequests) / dur.Seconds()
	r.step.Throughput = d.FrontDoorPerSecond
	all := append(polls, buys...)
	p := percentiles(all, "")
	d.P50Ms, d.P99Ms = p.P50, p.P99
	rp := percentiles(polls, "")
	d.RegistrationP50Ms, d.RegistrationP99Ms = rp.P50, rp.P99
	r.step.Latency["registration"] = rp
	for st := range d.Statuses {
		// A waitlisted registrant's read counts the positions before it
		// still waiting: the answers' costs differ by status.
		r.step.Latency["registration_"+strings.ToLower(st)] = percentiles(polls, st)
	}
	d.Purchases = len(buys)
	d.NotEligible = r.step.Funnel.NotEligible
	if w := d.Statuses[string(seckill.RegistrationWon)]; w != min(units, d.Registered) {
		r.problem("%d registrants told WON for %d units", w, units)
	}
	if len(rep.Steps) > 0 {
		fc := rep.Steps[len(rep.Steps)-1]
		d.FirstComeRequests, d.FirstComePerSecond = fc.Funnel.Requests, fc.Throughput
		d.FirstComeAcceptP99Ms = fc.Latency[OutAccepted].P99
		d.FirstComePurchasesPerUnit, _ = div(float64(fc.Funnel.Requests), float64(fc.Funnel.Accepted*max(1, rep.Config.Quantity)))
		d.FrontDoorVsFirstCome, _ = div(d.FrontDoorPerSecond, fc.Throughput)
	}
	d.PurchasesPerUnit, _ = div(float64(d.Purchases), float64(r.step.Funnel.Accepted))
	fmt.Fprintf(cfg.Progress, "draw sale %d: front door %d requests at %.0f/s (p99 %.1f ms), %d purchases, %d accepted, %v; following the orders\n",
		id, d.FrontDoorRequests, d.FrontDoorPerSecond, d.P99Ms, d.Purchases, r.step.Funnel.Accepted, d.Statuses)

	accepted := accepted(buys)
	if err := r.follow(ctx, accepted, nil); err != nil {
		return nil, err
	}
	r.reconcile(ctx)
	if cfg.TemporalAddr != "" && cfg.TaskQueue != "" {
		n, err := countOrderWorkflows(ctx, cfg, id, len(accepted))
		if err != nil {
			r.problem("count the order workflows: %v", err)
		}
		d.OrderWorkflows = n
		if n != int64(len(accepted)) {
			r.problem("Temporal holds %d order workflows for %d accepted orders", n, len(accepted))
		}
	}
	d.Step = *r.step
	fmt.Fprintf(cfg.Progress, "draw sale %d: %d orders created, %d paid, %d closed; %d order workflows for %d units, invariants ok: %v\n",
		id, r.step.Funnel.OrdersCreated, r.step.Funnel.Paid, r.step.Funnel.Closed, d.OrderWorkflows, units, r.step.InvariantsOK)
	return d, nil
}

// waitDrawn waits for the sale's start, then polls the session until its
// workflow has drawn (drawn_at is set), within drawTimeout.
func waitDrawn(ctx context.Context, session func(context.Context, int64) (*seckill.SessionView, error), id int64, start time.Time) (*seckill.Session, error) {
	select {
	case <-time.After(time.Until(start)):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	deadline := time.Now().Add(drawTimeout)
	for {
		v, err := session(ctx, id)
		if err == nil && v.Session != nil && v.Drawn() {
			return v.Session, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("draw sale %d not drawn %s after its start (is a worker running?): %v", id, drawTimeout, err)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// frontDoor sends the draw sale's start: each registrant, in a shuffled
// order at the level's concurrency, asks its registration once; a winner
// then buys one unit (with a fresh key under --keys), and one in
// drawTriers of the others tries to. won records the winners. It returns
// the registration reads, the purchases and the wall time.
func (r *stepRunner) frontDoor(ctx context.Context, level int, won []bool, d *Draw) (polls, buys []result, dur time.Duration) {
	n := len(r.shoppers)
	order := rand.Perm(n)
	regPath := fmt.Sprintf("/api/v1/sessions/%d/registration", r.step.SessionID)
	buyPath := fmt.Sprintf("/api/v1/sessions/%d/orders", r.step.SessionID)
	body := []byte(`{"quantity":1}`)
	var mu sync.Mutex
	statuses := map[string]int{}
	var others int
	var done atomic.Int64
	polls = make([]result, 0, n)
	r.c.warm(level)
	stop := r.progress("front door", &done, n)
	defer stop()
	start := time.Now()
	r.start, r.burstStart = start, start
	_, _ = closedLoop(level, n, func(k int) error {
		if ctx.Err() != nil {
			return nil
		}
		defer done.Add(1)
		s := r.shoppers[order[k]]
		t0 := time.Now()
		code, raw, _, err := r.c.do(http.MethodGet, regPath, s.auth, nil)
		poll := result{at: t0.Sub(start), latency: time.Since(t0), shopper: s.index, outcome: OutError}
		var v struct {
			Status string `json:"status"`
		}
		if err == nil && code == http.StatusOK && json.Unmarshal(raw, &v) == nil {
			poll.outcome = v.Status
		}
		mu.Lock()
		statuses[poll.outcome]++
		polls = append(polls, poll)
		winner := poll.outcome == string(seckill.RegistrationWon)
		won[s.index] = winner
		try := !winner && others%drawTriers == 0
		if !winner {
			others++
		}
		mu.Unlock()
		if !winner && !try {
			return nil
		}
		var header []string
		if r.cfg.Keys {
			header = []string{api.HeaderIdempotencyKey, uuid.Must(uuid.NewV7()).String()}
		}
		buy := r.purchase(buyPath, s, body, start, header...)
		mu.Lock()
		buys = append(buys, buy)
		if try {
			d.Tries++
		}
		mu.Unlock()
		return nil
	})
	d.Statuses = statuses
	return polls, buys, time.Since(start)
}

// countOrderWorkflows counts the order workflows Temporal holds for the
// sale, from its visibility (eventually consistent: asked again until it
// counts want, for a few seconds).
func countOrderWorkflows(ctx context.Context, cfg Config, sessionID int64, want int) (int64, error) {
	ns := cfg.TemporalNamespace
	if ns == "" {
		ns = "default"
	}
	c, err := temporal.Dial(ctx, sdkclient.Options{HostPort: cfg.TemporalAddr, Namespace: ns}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		return -1, err
	}
	defer c.Close()
	q := fmt.Sprintf("WorkflowType = '%s' AND SessionID = %d AND TaskQueue = '%s'", workflows.OrderWorkflowName, sessionID, cfg.TaskQueue)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: ns, Query: q})
		if err != nil {
			return -1, err
		}
		if resp.GetCount() == int64(want) || time.Now().After(deadline) {
			return resp.GetCount(), nil
		}
		time.Sleep(500 * time.Millisecond)
	}
}
