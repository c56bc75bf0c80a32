package bench

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// Targets are the ratios a 2-core machine should reach (issue "Load bench
// and speed"); the table and the HTML report show each next to its figure.
var Targets = map[string]float64{
	"admission_vs_fiber":      0.5,
	"soldout_vs_fiber":        0.85,
	"orders_vs_temporal_noop": 0.9,
}

// WriteTable prints the report for a terminal.
func WriteTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nseckill bench on %s, %s\n\n", r.Machine, r.StartedAt.Format("2006-01-02 15:04:05Z"))
	fmt.Fprintln(tw, "load\treq/s\tsold-out req/s\taccepted\taccept p99 ms\tsold out after s\tall WAIT_PAY after s\torders/s\tinvariants\t")
	for _, s := range r.Steps {
		load := fmt.Sprintf("c=%d", s.Concurrency)
		if s.Rate > 0 {
			load = fmt.Sprintf("%d/s", s.Rate)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%d\t%.1f\t%.2f\t%.2f\t%.0f\t%v\t\n", load, s.Throughput, s.SoldOutThroughput,
			s.Funnel.Accepted, s.Latency[outAccepted].P99, s.TimeToSellOutSeconds, s.TimeToAllWaitPaySeconds,
			s.OrdersPerSecond, okWord(s.InvariantsOK))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "funnel\trequests\trate limited\twindow\tsold-out fast path\tRedis sold out\tlimit\terrors\taccepted\tcreated\tpaid\tclosed\t")
	for _, s := range r.Steps {
		f := s.Funnel
		fmt.Fprintf(tw, "c=%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", s.Concurrency+s.Rate, f.Requests, f.RateLimited,
			f.Window, f.SoldOutMemory, f.SoldOutRedis, f.LimitExceeded, f.OtherErrors, f.Accepted, f.OrdersCreated, f.Paid, f.Closed)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency ms\toutcome\tcount\tp50\tp95\tp99\tmax\t")
	for _, s := range r.Steps {
		outs := make([]string, 0, len(s.Latency))
		for o := range s.Latency {
			outs = append(outs, o)
		}
		sort.Strings(outs)
		for _, o := range outs {
			p := s.Latency[o]
			fmt.Fprintf(tw, "c=%d\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n", s.Concurrency+s.Rate, o, p.Count, p.P50, p.P95, p.P99, p.Max)
		}
	}
	tw.Flush()
	if b := r.Baselines; b != nil {
		fmt.Fprintf(w, "\nbaselines (same run, same machine): bare Fiber %.0f req/s, admission script alone %.0f/s, Temporal no-op %.0f workflows/s\n",
			b.FiberRPS, b.LuaPerSecond, b.TemporalNoopPerSecond)
		for _, k := range []string{"admission_vs_fiber", "soldout_vs_fiber", "orders_vs_temporal_noop"} {
			if v, ok := r.Ratios[k]; ok {
				fmt.Fprintf(w, "  %-24s %.2f   (target ≥ %.2f: %s)\n", k, v, Targets[k], metWord(v >= Targets[k]))
			}
		}
	}
	writeCost(w, r.Temporal)
	fmt.Fprintf(w, "\ninvariants: %s\n", okWord(r.InvariantsOK))
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  problem: %s\n", p)
	}
	return nil
}

func okWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "BROKEN"
}

func metWord(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}
