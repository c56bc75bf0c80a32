// Package metrics holds seckill's Prometheus collectors (all named
// seckill_*), registered on one registry with the Go and process
// collectors, and the handler that serves them on /metrics. The API fills
// the request and admission series; the worker fills the sale series (stock,
// orders by status, relay backlog, reconcile drift) from its observer.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/buildinfo"
	"github.com/seckill/seckill/internal/tick"
)

// Metrics are the collectors of one process.
type Metrics struct {
	Registry *prometheus.Registry

	// HTTPRequests counts answers by route pattern, method and status.
	HTTPRequests *prometheus.CounterVec
	// HTTPDuration is the handling time by route pattern.
	HTTPDuration *prometheus.HistogramVec
	// Admissions counts admission answers by the layer that decided them
	// and their outcome (accepted or the error code): the funnel.
	Admissions *prometheus.CounterVec
	// RedisAdmit is the latency of the admission script call.
	RedisAdmit prometheus.Histogram
	// RedisCommands and RedisErrors time every Redis command by name
	// (redis.Instrument fills them).
	RedisCommands *prometheus.HistogramVec
	RedisErrors   *prometheus.CounterVec
	// WorkflowStart is the latency of StartWorkflow from the starter (the
	// API's, or the relay's in the worker); WorkflowStartFailures counts
	// failed starts by kind (timeout, overloaded, unavailable, other): the
	// order waits in the outbox for the next pass.
	WorkflowStart         prometheus.Histogram
	WorkflowStartFailures *prometheus.CounterVec
	// StarterInFlight, StarterLimit and StarterQueue are the starter's
	// starts in flight, its adaptive limit on them and the orders waiting
	// in its memory, by starter (api, relay); StarterDropped counts
	// handoffs that found the queue full (left to the outbox);
	// StarterYielding is 1 while the starter holds its starts for a busy
	// front door (a burst being answered).
	StarterInFlight *prometheus.GaugeVec
	StarterLimit    *prometheus.GaugeVec
	StarterQueue    *prometheus.GaugeVec
	StarterDropped  *prometheus.CounterVec
	// RiskChecks counts the risk check's outcomes before admission:
	// allow, deny, cached (a verdict reused), no_answer (decided without
	// the service's answer: it missed its deadline, now or for the same
	// shopper a moment ago), user_agent (refused by a User-Agent rule).
	RiskChecks      *prometheus.CounterVec
	StarterYielding *prometheus.GaugeVec

	// DependencyUp is 1 while MySQL, Redis or Temporal answered this
	// process's last ping (every DependencyPing), 0 when it did not: the
	// alerts' view of an outage, from each process's side.
	DependencyUp *prometheus.GaugeVec

	// FleetSize is how many API processes of this deployment are alive (by
	// their heartbeats in Redis); GlobalShare is this process's share of
	// SECKILL_LIMIT_GLOBAL_RPS, the fleet's budget split among them.
	FleetSize   prometheus.Gauge
	GlobalShare prometheus.Gauge

	// RelayBacklog is the number of entries waiting for a relay (queue
	// "starts": reservations whose workflow start is not confirmed;
	// "refunds": payments waiting for their refund); RelayOldest the age of
	// the oldest start. RelayActions counts what the relays did.
	RelayBacklog *prometheus.GaugeVec
	RelayOldest  *prometheus.GaugeVec
	RelayActions *prometheus.CounterVec
	// SweepActions counts what the worker's sweep did with stuck orders.
	SweepActions *prometheus.CounterVec
	// Orders, Stock, Drift, Stuck, Problems and InFlight are the last reconcile of
	// each preheated session, refreshed by the worker's observer.
	Orders   *prometheus.GaugeVec
	Stock    *prometheus.GaugeVec
	Drift    *prometheus.GaugeVec
	Stuck    *prometheus.GaugeVec
	Problems *prometheus.GaugeVec
	InFlight *prometheus.GaugeVec
	// ReconcileRuns counts observer passes by result (ok, drift, error).
	ReconcileRuns *prometheus.CounterVec
	// Refunds counts the refunds not done by state (pending, parked,
	// received), refreshed by the refund relay; RefundFailures counts
	// refund runs the provider failed, by what followed (pending: retried
	// later; parked).
	Refunds        *prometheus.GaugeVec
	RefundFailures *prometheus.CounterVec
	// Events counts the order events not delivered by state (pending,
	// parked), refreshed by the events relay; EventsDelivered counts
	// deliveries the receiver took; EventFailures counts failed ones by
	// what followed (pending: retried later; parked).
	Events          *prometheus.GaugeVec
	EventsDelivered prometheus.Counter
	EventFailures   *prometheus.CounterVec
	// SessionChanges counts the operators' session changes applied, by
	// action (pause, resume, add_stock, end, update): the dashboard's
	// annotations of a sale's controls (the audit rows hold the details).
	SessionChanges *prometheus.CounterVec

	observed map[string]bool // session ids with sale series
}

// New registers every collector on a fresh registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_http_requests_total", Help: "HTTP answers by route, method and status.",
		}, []string{"route", "method", "status"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_http_request_duration_seconds", Help: "HTTP handling time by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
		Admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_admission_total", Help: "Admission answers by the layer that decided and the outcome (the funnel).",
		}, []string{"layer", "outcome"}),
		RedisAdmit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seckill_redis_admit_duration_seconds", Help: "Latency of the admission script call (coalesced batches included).",
			Buckets: []float64{.0002, .0005, .001, .0025, .005, .01, .025, .05, .1, .25},
		}),
		RedisCommands: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_redis_command_duration_seconds", Help: "Latency of every Redis command by name (evalsha: the scripts; pipeline: a pipeline).",
			Buckets: []float64{.0002, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5},
		}, []string{"command"}),
		RedisErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_redis_command_errors_total", Help: "Redis commands that failed (timeouts, refused connections; a missing key is not an error).",
		}, []string{"command"}),
		WorkflowStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seckill_workflow_start_duration_seconds", Help: "Latency of StartWorkflow from the starter (the API's; the relay's in the worker).",
			Buckets: []float64{.0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		WorkflowStartFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_workflow_start_failures_total", Help: "Workflow starts that failed, by kind (timeout, overloaded, unavailable, other); the order waits in the pending-start outbox for the next pass.",
		}, []string{"kind"}),
		StarterInFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_starter_in_flight", Help: "Workflow starts in flight, by starter (api, relay).",
		}, []string{"starter"}),
		StarterLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_starter_limit", Help: "The starter's adaptive limit on starts in flight (grows while starts answer within 1 s, shrinks a tenth per slower round trip, halves on timeouts and overload).",
		}, []string{"starter"}),
		StarterYielding: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_starter_yielding", Help: "1 while the starter holds new workflow starts for a busy front door (at most SECKILL_STARTER_YIELD per order), by starter.",
		}, []string{"starter"}),
		StarterQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_starter_queue", Help: "Orders waiting in the starter's memory for their workflow start.",
		}, []string{"starter"}),
		StarterDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_starter_dropped_total", Help: "Winners the starter's queue had no room for: their start is left to the pending-start outbox.",
		}, []string{"starter"}),
		RiskChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_risk_checks_total", Help: "Risk checks before admission, by outcome: allow, deny, cached, no_answer (decided without the risk service's answer: it missed its deadline, now or for the shopper a moment ago), user_agent (a User-Agent rule refused).",
		}, []string{"outcome"}),
		FleetSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seckill_api_fleet_size", Help: "API processes of this deployment alive by their heartbeats in Redis, this one included (0 before the first heartbeat).",
		}),
		DependencyUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_dependency_up", Help: "1 while the dependency (mysql, redis, temporal) answered this process's last ping, 0 when it did not.",
		}, []string{"dependency"}),
		GlobalShare: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seckill_limit_global_share_rps", Help: "This process's share of the fleet's global rate limit (SECKILL_LIMIT_GLOBAL_RPS split among the live APIs); 0 when the limit is off.",
		}),
		RelayBacklog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_relay_backlog", Help: "Entries waiting for a relay: queue=starts (reservations without a confirmed workflow start), queue=refunds (payments waiting for their refund).",
		}, []string{"queue"}),
		RelayOldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_relay_oldest_seconds", Help: "Age of the oldest entry waiting for a relay.",
		}, []string{"queue"}),
		RelayActions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_relay_actions_total", Help: "What the relays did: started, existed (the API's start had worked), released, failed.",
		}, []string{"queue", "action"}),
		SweepActions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_sweep_actions_total", Help: "What the sweep did with orders past their deadline: closed (WAIT_PAY), queued (never created), released (closed, release pending), running (workflow alive: left alone), refreshed (a settled order's missing cached view written again), failed.",
		}, []string{"action"}),
		Orders: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_orders", Help: "Orders by status per session (last reconcile).",
		}, []string{"session_id", "status"}),
		Stock: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_stock", Help: "Remaining stock per session in MySQL (store=db) and in Redis (store=redis), last reconcile.",
		}, []string{"session_id", "store"}),
		Drift: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_reconcile_drift", Help: "Units on which Redis and MySQL disagree for good (orders MySQL refused after Redis admitted them); should stay 0.",
		}, []string{"session_id"}),
		Stuck: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_reconcile_stuck_orders", Help: "Orders past their pay deadline + the sweep grace still WAIT_PAY, or reservations past the pay timeout + grace not created or not released; the sweep closes them.",
		}, []string{"session_id"}),
		Problems: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_reconcile_problems", Help: "Broken invariants found by the last reconcile of the session; anything above 0 needs a look.",
		}, []string{"session_id"}),
		InFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_reconcile_in_flight", Help: "Reservations not yet an order row, or closed but not yet released in Redis.",
		}, []string{"session_id"}),
		ReconcileRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_reconcile_runs_total", Help: "Observer reconcile passes by result: ok, drift (some session broke an invariant), error.",
		}, []string{"result"}),
		Refunds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_refunds", Help: "Refunds not done by state: pending (tried now or after its backoff), parked (given up on until `seckill refunds retry`; anything above 0 needs ops), received (payments no workflow recorded yet).",
		}, []string{"state"}),
		RefundFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_refund_failures_total", Help: "Refund runs the payment provider failed, by what followed: pending (retried after a backoff) or parked.",
		}, []string{"state"}),
		Events: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_events", Help: "Order events not delivered to SECKILL_EVENTS_URL by state: pending (sent now, after its backoff, or after an earlier event of its order), parked (given up on until `seckill events retry`; anything above 0 needs ops).",
		}, []string{"state"}),
		EventsDelivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_events_delivered_total", Help: "Order events the receiver at SECKILL_EVENTS_URL took (answered 2xx).",
		}),
		EventFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_event_failures_total", Help: "Order event deliveries that failed, by what followed: pending (retried after a backoff) or parked.",
		}, []string{"state"}),
		SessionChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_session_changes_total", Help: "Operators' session changes applied (replays of a request not counted), by action: pause, resume, add_stock, end, update.",
		}, []string{"action"}),
	}
	// Every action's series from the start at 0: increase() sees the
	// first change (a series born at 1 would hide it).
	for _, a := range []seckill.SessionAction{seckill.ActionPause, seckill.ActionResume, seckill.ActionAddStock, seckill.ActionEnd, seckill.ActionUpdate} {
		m.SessionChanges.WithLabelValues(string(a))
	}
	m.Registry.MustRegister(m.Refunds, m.RefundFailures, m.Events, m.EventsDelivered, m.EventFailures, m.SessionChanges)
	m.Registry.MustRegister(m.HTTPRequests, m.HTTPDuration, m.Admissions, m.RedisAdmit, m.RedisCommands, m.RedisErrors, m.WorkflowStart,
		m.WorkflowStartFailures, m.StarterInFlight, m.StarterLimit, m.StarterQueue, m.StarterDropped, m.RiskChecks, m.StarterYielding, m.DependencyUp, m.FleetSize, m.GlobalShare, m.RelayBacklog, m.RelayOldest, m.RelayActions, m.SweepActions, m.Orders, m.Stock, m.Drift,
		m.Stuck, m.Problems, m.InFlight, m.ReconcileRuns, buildInfo(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SessionChanged counts a session change applied; a nil Metrics counts
// nothing.
func (m *Metrics) SessionChanged(action seckill.SessionAction) {
	if m != nil {
		m.SessionChanges.WithLabelValues(string(action)).Inc()
	}
}

// buildInfo is the constant 1 labelled with this binary's build, so a
// dashboard can tell which version each process runs during a rollout.
func buildInfo() prometheus.Collector {
	b := buildinfo.Read()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "seckill_build_info", Help: "1, labelled with the build of this process (version, commit, Go version).",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit, "go_version": b.GoVersion},
	})
	g.Set(1)
	return g
}

// ObserveReports sets the sale series from the given reconcile reports
// (one per preheated session); the series of sessions no longer reported
// are removed. Not safe for concurrent use: one observer calls it.
func (m *Metrics) ObserveReports(reports []seckill.Report) {
	seen := make(map[string]bool, len(reports))
	var pending, refunds int
	var oldest float64
	result := "ok"
	for _, r := range reports {
		id := strconv.FormatInt(r.SessionID, 10)
		seen[id] = true
		for _, st := range seckill.Statuses {
			m.Orders.WithLabelValues(id, string(st)).Set(float64(r.Orders[st]))
		}
		m.Stock.WithLabelValues(id, "db").Set(float64(r.DBStock))
		m.Stock.WithLabelValues(id, "redis").Set(float64(r.RedisStock))
		m.Drift.WithLabelValues(id).Set(float64(r.Drift))
		m.Stuck.WithLabelValues(id).Set(float64(r.StuckOrders))
		m.Problems.WithLabelValues(id).Set(float64(len(r.Problems)))
		m.InFlight.WithLabelValues(id).Set(float64(r.InFlight))
		pending += r.PendingStarts
		refunds += r.RefundsPending
		oldest = max(oldest, r.OldestPendingSeconds)
		if !r.OK {
			result = "drift"
		}
	}
	// Series are overwritten in place, never reset first, so a scrape
	// between two passes cannot see a session vanish and come back.
	for id := range m.observed {
		if !seen[id] {
			for _, v := range []*prometheus.GaugeVec{m.Orders, m.Stock, m.Drift, m.Stuck, m.Problems, m.InFlight} {
				v.DeletePartialMatch(prometheus.Labels{"session_id": id})
			}
		}
	}
	m.observed = seen
	m.RelayBacklog.WithLabelValues("starts").Set(float64(pending))
	m.RelayBacklog.WithLabelValues("refunds").Set(float64(refunds))
	m.RelayOldest.WithLabelValues("starts").Set(oldest)
	m.ReconcileRuns.WithLabelValues(result).Inc()
}

// DependencyPing is how often WatchDependencies pings by default.
const DependencyPing = 5 * time.Second

// WatchDependencies pings each dependency at once and then every interval
// (DependencyPing when 0) until ctx ends, and sets DependencyUp from the
// answers. A ping gets until the next one to answer: a dependency slower
// than that is as good as down for a sale.
func (m *Metrics) WatchDependencies(ctx context.Context, interval time.Duration, pings map[string]func(context.Context) error) {
	if interval <= 0 {
		interval = DependencyPing
	}
	check := func() {
		for name, ping := range pings {
			pctx, cancel := context.WithTimeout(ctx, interval)
			up := 1.0
			if ping(pctx) != nil {
				up = 0
			}
			cancel()
			if ctx.Err() == nil {
				m.DependencyUp.WithLabelValues(name).Set(up)
			}
		}
	}
	check()
	tick.Every(ctx, interval, check)
}

// Handler serves the registry in the Prometheus text format, or in
// OpenMetrics to a scraper that asks for it: the format that carries the
// latency histograms' exemplars (a request's trace id in its bucket).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Since returns the seconds elapsed since t, for Observe.
func Since(t time.Time) float64 { return time.Since(t).Seconds() }

// Observe refreshes the sale series every interval until ctx ends, from
// reconcile, which reports on every preheated session. Ops read stock,
// orders by status, backlog and drift from here during a sale instead of
// running reconcile by hand; the Temporal Schedule's reconcile stays the
// record in the Web UI.
func (m *Metrics) Observe(ctx context.Context, interval time.Duration, reconcile func(context.Context) ([]seckill.Report, error)) {
	pass := func() {
		if reports, err := reconcile(ctx); err != nil {
			if ctx.Err() == nil {
				m.ReconcileRuns.WithLabelValues("error").Inc()
			}
		} else {
			m.ObserveReports(reports)
		}
	}
	pass() // the series exist from the start, not an interval later
	tick.Every(ctx, interval, pass)
}
