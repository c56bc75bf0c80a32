package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"

	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill/temporal"
)

// Order paths whose Temporal cost the bench counts: the keys of
// TemporalCost's maps.
const (
	pathPaid    = "paid"
	pathTimeout = "timeout"
	pathCancel  = "cancel"
	// pathRefunded is a paid order an operator refunded: its order
	// workflow and its refund workflow together.
	pathRefunded = "refunded"
)

// CostPaths are the order paths whose cost the bench counts, in the order
// the reports list them.
var CostPaths = []string{pathPaid, pathTimeout, pathCancel, pathRefunded}

// TemporalCost is what an order costs in Temporal, counted from the real
// histories of a few orders of each path (temporal.CountActions): Temporal
// Cloud's billable actions (a default Cloud namespace allows 500 actions/s)
// and history events. Each map is keyed by path (paid, timeout, cancel) and
// holds the mean over the sampled orders; a path the run did not take (no
// --pay-timeout: no timed-out order) is absent.
type TemporalCost struct {
	ActionsPerOrder map[string]float64 `json:"actions_per_order"`
	EventsPerOrder  map[string]float64 `json:"history_events_per_order"`
	// ActionsByKind splits ActionsPerOrder (start, local_activities,
	// activities, timers, signals, search_attribute_upserts, …).
	ActionsByKind map[string]map[string]float64 `json:"actions_by_kind"`
	Sampled       map[string]int                `json:"sampled"`
}

// costs collects the sampled orders' costs over every step.
type costs struct {
	c      client.Client
	byPath map[string][]temporal.Cost
}

func dialCosts(ctx context.Context, cfg Config) (*costs, error) {
	if cfg.TemporalAddr == "" || cfg.CostSample <= 0 {
		return nil, nil
	}
	ns := cfg.TemporalNamespace
	if ns == "" {
		ns = "default"
	}
	c, err := temporal.Dial(ctx, client.Options{HostPort: cfg.TemporalAddr, Namespace: ns}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		return nil, err
	}
	return &costs{c: c, byPath: map[string][]temporal.Cost{}}, nil
}

// count reads the histories of the orders taking path (their workflows
// must end: a paid order's ends right after PAID, a closed one's after the
// close) and keeps their costs.
func (r *stepRunner) count(ctx context.Context, path string, orders []result) {
	if r.costs == nil {
		return
	}
	for _, x := range orders {
		cctx, cancel := context.WithTimeout(ctx, r.cfg.Settle)
		c, err := temporal.OrderCost(cctx, r.costs.c, x.orderNo)
		cancel()
		if err != nil {
			r.problem("actions of %s order %s: %v", path, x.orderNo, err)
			continue
		}
		r.costs.byPath[path] = append(r.costs.byPath[path], c)
	}
}

// report averages the costs per path; nil when nothing was counted.
func (cs *costs) report() *TemporalCost {
	if cs == nil || len(cs.byPath) == 0 {
		return nil
	}
	t := &TemporalCost{ActionsPerOrder: map[string]float64{}, EventsPerOrder: map[string]float64{},
		ActionsByKind: map[string]map[string]float64{}, Sampled: map[string]int{}}
	for path, cs := range cs.byPath {
		n := float64(len(cs))
		kinds := map[string]float64{}
		for _, c := range cs {
			t.ActionsPerOrder[path] += float64(c.Actions) / n
			t.EventsPerOrder[path] += float64(c.Events) / n
			for k, v := range c.ByKind {
				kinds[k] += float64(v) / n
			}
		}
		t.ActionsByKind[path] = kinds
		t.Sampled[path] = len(cs)
	}
	return t
}

func (cs *costs) close() {
	if cs != nil {
		cs.c.Close()
	}
}

// writeCost prints the actions per order for a terminal.
func writeCost(w io.Writer, t *TemporalCost) {
	if t == nil {
		return
	}
	fmt.Fprintln(w, "\nTemporal cost per order (billable actions, history events; counted from real histories):")
	paths := make([]string, 0, len(t.ActionsPerOrder))
	for p := range t.ActionsPerOrder {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		kinds := make([]string, 0, len(t.ActionsByKind[p]))
		for k, v := range t.ActionsByKind[p] {
			kinds = append(kinds, fmt.Sprintf("%s %.3g", k, v))
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "  %-8s %.2f actions, %.1f events (%d orders): %v\n", p, t.ActionsPerOrder[p], t.EventsPerOrder[p], t.Sampled[p], kinds)
	}
}
