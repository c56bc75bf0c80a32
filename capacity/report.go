package capacity

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/seckill/seckill/temporal"
)

// Report is one measurement: the per-unit cost of each phase of a small
// sale on each server, and the Temporal cost of each order path counted
// from the orders' histories.
type Report struct {
	Date          string  `json:"date"`
	Commit        string  `json:"commit,omitempty"`
	OrdersPerPath int     `json:"orders_per_path"`
	PayTimeout    string  `json:"pay_timeout"`
	Phases        []Phase `json:"phases"`
	// Histories is by order path (paid, cancel, timeout): the mean of
	// temporal.CountActions over the path's orders.
	Histories map[string]HistoryCost `json:"histories"`
}

// HistoryCost is the mean Temporal cost of the orders of one path.
type HistoryCost struct {
	Orders  int                `json:"orders"`
	Actions float64            `json:"actions"`
	Events  float64            `json:"history_events"`
	ByKind  map[string]float64 `json:"actions_by_kind"`
}

// MeanCost averages the costs of a path's orders.
func MeanCost(cs []temporal.Cost) HistoryCost {
	h := HistoryCost{Orders: len(cs), ByKind: map[string]float64{}}
	n := float64(len(cs))
	for _, c := range cs {
		h.Actions += float64(c.Actions) / n
		h.Events += float64(c.Events) / n
		for k, v := range c.ByKind {
			h.ByKind[k] += float64(v) / n
		}
	}
	return h
}

// Phase returns the phase of that name, or nil.
func (r *Report) Phase(name string) *Phase {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// Markdown writes the report as tables: one per server, a row per phase,
// a column per counter that any phase moved.
func (r *Report) Markdown(w io.Writer) {
	fmt.Fprintf(w, "Measured %s (commit %s): %d orders per path, pay timeout %s.\n", r.Date, r.Commit, r.OrdersPerPath, r.PayTimeout)
	for _, server := range r.servers() {
		cols := map[string]bool{}
		for _, p := range r.Phases {
			for k, v := range p.Per[server] {
				if math.Abs(v) >= 0.005 {
					cols[k] = true
				}
			}
		}
		if len(cols) == 0 {
			continue
		}
		names := make([]string, 0, len(cols))
		for k := range cols {
			names = append(names, k)
		}
		sort.Strings(names)
		fmt.Fprintf(w, "\n%s, per unit (idle traffic taken off):\n\n| phase | units | s | %s |\n|---|---|---|%s\n",
			server, strings.Join(names, " | "), strings.Repeat("---|", len(names)))
		for _, p := range r.Phases {
			if p.Per[server] == nil {
				continue
			}
			vals := make([]string, len(names))
			for i, k := range names {
				vals[i] = fmt.Sprintf("%.2f", p.Per[server][k])
			}
			fmt.Fprintf(w, "| %s | %d | %.1f | %s |\n", p.Name, p.Units, p.Seconds, strings.Join(vals, " | "))
		}
	}
	paths := make([]string, 0, len(r.Histories))
	for p := range r.Histories {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	fmt.Fprintf(w, "\nTemporal, per order, from the histories:\n\n| path | orders | billable actions | history events | actions by kind |\n|---|---|---|---|---|\n")
	for _, p := range paths {
		h := r.Histories[p]
		kinds := make([]string, 0, len(h.ByKind))
		for k, v := range h.ByKind {
			kinds = append(kinds, fmt.Sprintf("%s %.2g", k, v))
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "| %s | %d | %.2f | %.2f | %s |\n", p, h.Orders, h.Actions, h.Events, strings.Join(kinds, ", "))
	}
}

// servers are the servers the phases counted: Redis, MySQL and Temporal
// first, then the processes.
func (r *Report) servers() []string {
	seen := map[string]bool{}
	var others []string
	for _, p := range r.Phases {
		for s := range p.Per {
			if !seen[s] {
				seen[s] = true
				if s != "redis" && s != "mysql" && s != "temporal" {
					others = append(others, s)
				}
			}
		}
	}
	sort.Strings(others)
	var out []string
	for _, s := range []string{"redis", "mysql", "temporal"} {
		if seen[s] {
			out = append(out, s)
		}
	}
	return append(out, others...)
}
