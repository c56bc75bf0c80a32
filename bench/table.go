package bench

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// WriteTable prints the report for a terminal.
func WriteTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nseckill bench on %s, %s\n", r.Machine, r.StartedAt.Format("2006-01-02 15:04:05Z"))
	fmt.Fprintf(w, "cpu pinning: %s\n", r.CPUPinning.Words())
	if len(r.Repeats) > 1 {
		fmt.Fprintf(w, "rounds: %d, interleaved (baselines, then the steps, each round)\n", len(r.Repeats))
	}
	fmt.Fprintln(w)
	steps := r.Steps
	if rs := r.Reserved; rs != nil {
		steps = append(steps[:len(steps):len(steps)], rs.Step)
	}
	if d := r.Draw; d != nil {
		steps = append(steps[:len(steps):len(steps)], d.Step)
	}
	fmt.Fprintln(tw, "load\treq/s\tsold-out req/s\tkeyed sold-out req/s\taccepted\taccept p99 ms\tsold out after s\tall WAIT_PAY after s\torders/s\tcreated/s\tinvariants\t")
	for _, s := range steps {
		load := stepLabel(s)
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%d\t%.1f\t%.2f\t%.2f\t%.0f\t%.0f\t%v\t\n", load, s.Throughput, s.SoldOutThroughput,
			s.SoldOutKeyedThroughput, s.Funnel.Accepted, s.Latency[OutAccepted].P99, s.TimeToSellOutSeconds, s.TimeToAllWaitPaySeconds,
			s.OrdersPerSecond, s.CreationPerSecond, okWord(s.InvariantsOK))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "funnel\trequests\trate limited\twindow\tnot registered\tsold-out fast path\tRedis sold out\tlimit\terrors\taccepted\tcreated\tpaid\tclosed\t")
	for _, s := range steps {
		f := s.Funnel
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", stepLabel(s), f.Requests, f.RateLimited,
			f.Window, f.NotEligible, f.SoldOutMemory, f.SoldOutRedis, f.LimitExceeded, f.OtherErrors, f.Accepted, f.OrdersCreated, f.Paid, f.Closed)
	}
	tw.Flush()
	writeReserved(w, r.Reserved)
	writeDraw(w, r.Draw)
	writeItems(w, r.Items)
	if cc := r.Captcha; cc != nil {
		fmt.Fprintf(w, "  captcha: %d drawn at %.0f/s (p50 %.1f ms, p99 %.1f ms): %.3f of the sold-out answers' rate\n",
			cc.Drawn, cc.PerSecond, cc.P50Ms, cc.P99Ms, cc.VsSoldOut)
	}
	for _, s := range steps {
		if sl := s.StartLatency; sl != nil && sl.Starts > 0 {
			fmt.Fprintf(w, "  %s: the API started %d workflows, StartWorkflow p50 %.1f ms, p99 %.1f ms\n",
				stepLabel(s), sl.Starts, sl.P50Ms, sl.P99Ms)
		}
		if s.FiberThroughput > 0 {
			fmt.Fprintf(w, "  %s: bare Fiber sent the same burst just before it: %.0f req/s (the burst %.0f, its losers %.0f)\n",
				stepLabel(s), s.FiberThroughput, s.Throughput, s.Losers.perSecond())
		}
		if s.Funnel.OrdersCreated > 0 {
			fmt.Fprintf(w, "  %s: %d of the %d orders were created while the burst was being answered\n",
				stepLabel(s), s.CreatedDuringBurst, s.Funnel.OrdersCreated)
		}
		if tc := s.TemporalCPU; tc != nil {
			if tc.CreateMs > 0 {
				fmt.Fprintf(w, "  %s: Temporal server CPU per order: created %.1f ms (%.0f%% of the busy CPU)", stepLabel(s), tc.CreateMs, tc.CreateShare*100)
			} else {
				fmt.Fprintf(w, "  %s: Temporal server CPU per order: created and paid meanwhile %.1f ms (%.0f%% of the busy CPU; %d of the %d payments before the last order was created)",
					stepLabel(s), tc.CreateAndPayMs, tc.CreateShare*100, s.PaidDuringCreation, s.Funnel.Paid)
			}
			if tc.PayMs > 0 {
				fmt.Fprintf(w, ", paid %.1f ms (%.0f%%)", tc.PayMs, tc.PayShare*100)
			}
			if tc.CloseMs > 0 {
				fmt.Fprintf(w, ", closed %.1f ms (%.0f%%)", tc.CloseMs, tc.CloseShare*100)
			}
			fmt.Fprintln(w)
		}
		if s.PaymentsPerSecond > 0 {
			fmt.Fprintf(w, "  %s: %d orders paid after the last was created, at %.0f/s\n", stepLabel(s), s.Funnel.Paid, s.PaymentsPerSecond)
		}
		if c := s.Closing; c != nil {
			fmt.Fprintf(w, "  %s: %d unpaid orders closed at %.0f/s from the first pay deadline, the last %.2f s after the last deadline (lag p50 %.2f s, p99 %.2f s)\n",
				stepLabel(s), c.Orders, c.PerSecond, c.AfterLastDeadlineSeconds, c.LagP50Seconds, c.LagP99Seconds)
		}
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency ms\toutcome\tcount\tp50\tp95\tp99\tmax\t")
	for _, s := range steps {
		outs := make([]string, 0, len(s.Latency))
		for o := range s.Latency {
			outs = append(outs, o)
		}
		sort.Strings(outs)
		for _, o := range outs {
			p := s.Latency[o]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n", stepLabel(s), o, p.Count, p.P50, p.P95, p.P99, p.Max)
		}
	}
	tw.Flush()
	if b := r.Baselines; b != nil {
		what := "same run, same machine"
		if len(r.Repeats) > 1 {
			what = fmt.Sprintf("same run, same machine, median of %d rounds", len(r.Repeats))
		}
		fmt.Fprintf(w, "\nbaselines (%s): bare Fiber %.0f req/s, admission script alone %.0f/s, Temporal no-op %.0f workflows/s\n",
			what, b.FiberRPS, b.LuaPerSecond, b.TemporalNoopPerSecond)
		if b.TemporalNoopAfter > 0 {
			fmt.Fprintf(w, "  Temporal no-op: %.0f workflows/s before the steps, %.0f after (their mean is the baseline)\n",
				b.TemporalNoopBefore, b.TemporalNoopAfter)
		}
		if b.TemporalNoopCPUMs > 0 {
			fmt.Fprintf(w, "  Temporal server CPU per no-op workflow: %.1f ms (%.0f%% of the busy CPU)\n", b.TemporalNoopCPUMs, b.TemporalNoopShare*100)
		}
		if a := b.AdmissionOnly; a != nil {
			fmt.Fprintf(w, "  admission only (the same burst, order tier off): %.0f req/s, winners' accept p50 %.1f ms, p99 %.1f ms\n",
				a.RequestsPerSecond, a.AcceptedP50, a.AcceptedP99)
			if u := a.Unkeyed; u != nil {
				fmt.Fprintf(w, "  admission only, keyed | without keys: %.0f | %.0f req/s, refusals' p50 %.1f | %.1f ms\n",
					a.RequestsPerSecond, u.RequestsPerSecond, a.RefusedP50, u.RefusedP50)
				if k, p := a.CPU, u.CPU; k != nil && p != nil {
					fmt.Fprintf(w, "  admission only, CPU per request, keyed | without keys: API %.1f | %.1f µs, Redis %.1f | %.1f µs, "+
						"load generator %.1f | %.1f µs, the machine %.1f | %.1f µs\n",
						k.API, p.API, k.Redis, p.Redis, k.Bench, p.Bench, k.Machine, p.Machine)
				}
			}
		}
		for _, rt := range Ratios {
			if v, ok := r.Ratios[rt.Key]; ok {
				spread := ""
				if sp, ok := r.RatiosSpread[rt.Key]; ok {
					spread = fmt.Sprintf("   spread %.2f over %d rounds", sp, len(r.Repeats))
				}
				fmt.Fprintf(w, "  %-28s %.2f   (target %s: %s)%s\n", rt.Key, v, rt.TargetWords(), metWord(rt.Met(v)), spread)
			}
		}
		if len(r.Repeats) > 1 {
			for _, rd := range r.Repeats {
				fmt.Fprintf(w, "    round %d:", rd.N)
				for _, k := range RatioKeys {
					if v, ok := rd.Ratios[k]; ok {
						fmt.Fprintf(w, " %s %.2f", k, v)
					}
				}
				fmt.Fprintf(w, ", invariants %s\n", okWord(rd.InvariantsOK))
			}
		}
	}
	if len(r.RedisAOF) > 0 {
		fmt.Fprintln(w, "\nRedis persistence (the admission script against a private redis-server per setting, same run; noisy on a shared machine):")
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "appendfsync\tcalls/s\tspread\tp50 ms\tp99 ms\tvs no persistence\t")
		base := r.RedisAOF["no"].PerSecond
		for _, m := range AOFModes {
			x, ok := r.RedisAOF[m]
			if !ok {
				continue
			}
			rel := "—"
			if base > 0 {
				rel = fmt.Sprintf("%.2f", x.PerSecond/base)
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t\n", m, x.PerSecond, x.PerSecondSpread, x.P50, x.P99, rel)
		}
		tw.Flush()
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

// stepLabel names a step by its load (and round, in a --repeat run).
func stepLabel(s Step) string {
	load := fmt.Sprintf("c=%d", s.Concurrency)
	if s.Rate > 0 {
		load = fmt.Sprintf("%d/s", s.Rate)
	}
	if s.Repeat > 0 {
		load = fmt.Sprintf("#%d %s", s.Repeat, load)
	}
	if s.Sale != "" {
		load = s.Sale + " " + load
	}
	return load
}

// writeReserved prints the reserved sale's registrations beside its burst.
func writeReserved(w io.Writer, rs *Reserved) {
	if rs == nil {
		return
	}
	fmt.Fprintf(w, "  reserved sale %d: %d of %d registered in %.1f s, %.0f/s (p50 %.1f ms, p99 %.1f ms)",
		rs.SessionID, rs.Registered, rs.Registrations, rs.Seconds, rs.PerSecond, rs.P50Ms, rs.P99Ms)
	if len(rs.Refused) > 0 {
		fmt.Fprintf(w, ", refused %v", rs.Refused)
	}
	fmt.Fprintf(w, "; window %.1f s", rs.WindowSeconds)
	if rs.PilotRegistrations > 0 {
		fmt.Fprintf(w, " (a pilot's %d at %.0f/s)", rs.PilotRegistrations, rs.PilotPerSecond)
	}
	fmt.Fprintf(w, "; preheat %.2f s\n", rs.PreheatSeconds)
	if rs.MySQLRows > 0 || rs.RedisMembers > 0 {
		fmt.Fprintf(w, "  reserved sale %d: %d rows in MySQL, a Redis set of %d members in %d bytes (%.1f per member)\n",
			rs.SessionID, rs.MySQLRows, rs.RedisMembers, rs.RedisBytes, float64(rs.RedisBytes)/float64(max(1, rs.RedisMembers)))
	}
	fmt.Fprintf(w, "  reserved sale %d: registrations_vs_burst %.3f (burst %.0f req/s), burst_vs_first_come %.2f, %d refused NOT_ELIGIBLE\n",
		rs.SessionID, rs.RegistrationsVsBurst, rs.Step.Throughput, rs.BurstVsFirstCome, rs.NotEligible)
}

// writeDraw prints the draw sale's front door beside the first-come burst.
func writeDraw(w io.Writer, d *Draw) {
	if d == nil {
		return
	}
	fmt.Fprintf(w, "  draw sale %d: %d units, %d registered at %.0f/s (window %.1f s), drawn %.2f s after the start: %v\n",
		d.SessionID, d.Units, d.Registered, d.RegistrationsPerSecond, d.WindowSeconds, d.DrawSeconds, d.Statuses)
	fmt.Fprintf(w, "  draw sale %d: front door %d requests in %.2f s, %.0f/s (p50 %.1f ms, p99 %.1f ms; GET /registration p99 %.1f ms), front_door_vs_first_come %.2f\n",
		d.SessionID, d.FrontDoorRequests, d.FrontDoorSeconds, d.FrontDoorPerSecond, d.P50Ms, d.P99Ms, d.RegistrationP99Ms, d.FrontDoorVsFirstCome)
	fmt.Fprintf(w, "  draw sale %d: %d purchases (%d tries by non-winners, %d refused NOT_ELIGIBLE), %.2f a unit against the first-come burst's %.1f (%d requests, %.0f/s, accept p99 %.1f ms)\n",
		d.SessionID, d.Purchases, d.Tries, d.NotEligible, d.PurchasesPerUnit, d.FirstComePurchasesPerUnit, d.FirstComeRequests, d.FirstComePerSecond, d.FirstComeAcceptP99Ms)
	if d.OrderWorkflows >= 0 {
		fmt.Fprintf(w, "  draw sale %d: Temporal holds %d order workflows for its %d units\n", d.SessionID, d.OrderWorkflows, d.Units)
	}
}

// Words says how the stack ran, for the table and the HTML report.
func (p CPUPinning) Words() string {
	if p.Mode != "pinned" {
		return "off (every process on every CPU)"
	}
	return fmt.Sprintf("API and Redis on CPU %s %v; Temporal, worker and MySQL on CPU %s %v; the load generator unpinned",
		p.FrontCPU, p.Front, p.BackCPU, p.Back)
}
