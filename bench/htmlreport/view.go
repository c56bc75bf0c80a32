package htmlreport

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/bench"
)

// The view model: the page as already formatted strings and built charts,
// so that the template holds no logic beyond loops and conditionals.

type page struct {
	Machine, Started string
	OK               bool
	Problems         []string
	Config           []kv
	HasRatios        bool
	Ratios           []ratioRow
	Baselines        []baselineRow // nil: not measured
	Steps            []stepView
	Throughput       *svgChart // nil without steps
	Cost             []costRow // nil: not counted
	AOF              []aofRow  // nil: --redis-aof not used
	Reserved         []kv      // nil: --registrations not used
	Draw             []kv      // nil: --draw not used
}

// aofRow is one Redis persistence setting measured by --redis-aof.
type aofRow struct{ Mode, PerSecond, Spread, P50, P99, Relative string }

func aofRows(m map[string]bench.AOFResult) []aofRow {
	var rows []aofRow
	base := m["no"].PerSecond
	for _, mode := range bench.AOFModes {
		x, ok := m[mode]
		if !ok {
			continue
		}
		rel := "—"
		if base > 0 {
			rel = fmtNum(x.PerSecond/base, 2)
		}
		rows = append(rows, aofRow{Mode: mode, PerSecond: fmtRate(x.PerSecond), Spread: fmtNum(x.PerSecondSpread, 2),
			P50: fmtMs(x.P50), P99: fmtMs(x.P99), Relative: rel})
	}
	return rows
}

// costRow is one order path's cost in Temporal.
type costRow struct{ Path, Actions, Events, Sampled, ByKind string }

func costRows(t *bench.TemporalCost) []costRow {
	if t == nil {
		return nil
	}
	var rows []costRow
	for _, path := range bench.CostPaths {
		a, ok := t.ActionsPerOrder[path]
		if !ok {
			continue
		}
		kinds := make([]string, 0, len(t.ActionsByKind[path]))
		for k, v := range t.ActionsByKind[path] {
			kinds = append(kinds, fmt.Sprintf("%s %.3g", k, v))
		}
		sort.Strings(kinds)
		rows = append(rows, costRow{Path: path, Actions: fmt.Sprintf("%.2f", a),
			Events: fmt.Sprintf("%.1f", t.EventsPerOrder[path]), Sampled: fmt.Sprint(t.Sampled[path]),
			ByKind: strings.Join(kinds, ", ")})
	}
	return rows
}

type kv struct{ Key, Value, Help string }

type ratioRow struct {
	Name, Meaning, Value, Target string
	Spread                       string // (max − min) / median over the rounds; "—" with one round
	Status                       string // "met", "missed" or "absent"
}

type baselineRow struct{ Name, Value, Unit, Meaning string }

type stepView struct {
	N                                                       int
	Load                                                    string
	Requests, Duration                                      string
	Throughput, SoldOutThroughput, SoldOutKeyedThroughput   string
	SellOut, AllWaitPay, OrdersPerSecond, CreationPerSecond string
	AcceptedP99                                             string
	OK                                                      bool
	Latency                                                 *svgChart // nil: empty timeline
	Funnel                                                  *svgChart
	Outcomes                                                []outcomeRow
	Reconcile                                               []kv
}

type outcomeRow struct{ Name, Code, Count, P50, P95, P99, Max string }

func buildPage(r *bench.Report) page {
	p := page{
		Machine:    fmtOrDash(r.Machine),
		Started:    fmtTime(r.StartedAt),
		OK:         r.InvariantsOK,
		Problems:   r.Problems,
		Config:     configRows(r.Config),
		HasRatios:  len(r.Ratios) > 0,
		Ratios:     ratioRows(r.Ratios, r.RatiosSpread),
		Baselines:  baselineRows(r.Baselines),
		Throughput: throughputChart(r.Steps, r.Baselines),
		Cost:       costRows(r.Temporal),
		AOF:        aofRows(r.RedisAOF),
	}
	p.Config = append(p.Config, kv{"CPU pinning", r.CPUPinning.Words(), "--pin: the API and Redis on one CPU, Temporal, the worker and MySQL on the other (taskset)"})
	if len(r.Repeats) > 1 {
		p.Config = append(p.Config, kv{"Rounds", fmtInt(len(r.Repeats)) + ", interleaved", "--repeat: baselines then steps, each round; ratios are medians over the rounds"})
	}
	for i, s := range r.Steps {
		p.Steps = append(p.Steps, buildStep(i+1, s))
	}
	if rs := r.Reserved; rs != nil {
		p.Steps = append(p.Steps, buildStep(len(p.Steps)+1, rs.Step))
		p.Reserved = reservedRows(rs)
	}
	if d := r.Draw; d != nil {
		p.Steps = append(p.Steps, buildStep(len(p.Steps)+1, d.Step))
		p.Draw = drawRows(d)
	}
	return p
}

// drawRows are the draw sale's front door beside the first-come burst.
func drawRows(d *bench.Draw) []kv {
	rows := []kv{
		{"Units; registered", fmtInt(d.Units) + "; " + fmtInt(d.Registered), "every shopper of the run registered through the API (at " + fmtRate(d.RegistrationsPerSecond) + "/s)"},
		{"Draw", fmtSeconds(d.DrawSeconds), "from the start to drawn_at: the session's workflow drew among every registrant"},
		{"Registrations after the draw", fmt.Sprint(d.Statuses), "what GET /registration answered each registrant"},
		{"Front door", fmtInt(d.FrontDoorRequests) + " requests, " + fmtRate(d.FrontDoorPerSecond) + "/s", "every registrant's registration read and the purchases after it, in " + fmtSeconds(d.FrontDoorSeconds)},
		{"Front door p50 / p99", fmtMs(d.P50Ms) + " / " + fmtMs(d.P99Ms) + " ms", "registration reads alone: p99 " + fmtMs(d.RegistrationP99Ms) + " ms"},
		{"front_door_vs_first_come", fmtNum(d.FrontDoorVsFirstCome, 2), "the front door's requests/s over the last first-come burst's (" + fmtRate(d.FirstComePerSecond) + "), same run"},
		{"Purchases per unit", fmtNum(d.PurchasesPerUnit, 2) + " (first come: " + fmtNum(d.FirstComePurchasesPerUnit, 1) + ")", fmtInt(d.Purchases) + " purchases, " + fmtInt(d.Tries) + " of them non-winners trying"},
		{"Refused NOT_ELIGIBLE", fmtInt(d.NotEligible), "non-winners' tries (after the sell-out an API answers SOLD_OUT first)"},
	}
	if d.OrderWorkflows >= 0 {
		rows = append(rows, kv{"Order workflows", fmtInt(int(d.OrderWorkflows)) + " for " + fmtInt(d.Units) + " units", "what Temporal holds for the sale: the winners' orders only"})
	}
	return rows
}

// reservedRows are the reserved sale's registrations beside its burst.
func reservedRows(rs *bench.Reserved) []kv {
	rows := []kv{
		{"Registrations", fmtInt(rs.Registered) + " of " + fmtInt(rs.Registrations), "distinct shoppers registered through the API (201), at the run's concurrency"},
		{"Registrations/s", fmtRate(rs.PerSecond), "registered over the time from the first registration sent to the last answer (" + fmtSeconds(rs.Seconds) + ")"},
		{"Registration p50 / p99", fmtMs(rs.P50Ms) + " / " + fmtMs(rs.P99Ms) + " ms", "one Redis set add and one MySQL row each"},
		{"registrations_vs_burst", fmtNum(rs.RegistrationsVsBurst, 3), "registrations/s over the sale's burst requests/s (" + fmtRate(rs.Step.Throughput) + "), same run"},
		{"Refused NOT_ELIGIBLE", fmtInt(rs.NotEligible), "burst requests of shoppers who had not registered (after the sell-out an API answers SOLD_OUT first)"},
		{"Registration window", fmtSeconds(rs.WindowSeconds), "from the sale's creation to its start (a pilot's pace with a margin, or --registration-window)"},
		{"Preheat", fmtSeconds(rs.PreheatSeconds), "the preheat after the registrations, which copies every registrant from MySQL into Redis"},
	}
	if rs.BurstVsFirstCome > 0 {
		rows = append(rows, kv{"burst_vs_first_come", fmtNum(rs.BurstVsFirstCome, 2), "the sale's burst requests/s over the last first-come step's"})
	}
	if rs.MySQLRows > 0 || rs.RedisMembers > 0 {
		rows = append(rows, kv{"Stored", fmtInt(int(rs.MySQLRows)) + " MySQL rows; Redis set of " + fmtInt(int(rs.RedisMembers)) +
			" members, " + fmtInt(int(rs.RedisBytes)) + " bytes", "MEMORY USAGE of the registrant set, every member sampled"})
	}
	if len(rs.Refused) > 0 {
		rows = append(rows, kv{"Registrations refused", fmt.Sprint(rs.Refused), "by error code"})
	}
	return rows
}

func configRows(c bench.Settings) []kv {
	load := "closed loop, " + fmtInt(c.Concurrency) + " requests in flight"
	if c.Rate > 0 {
		load = "open loop, " + fmtInt(c.Rate) + " requests/s"
	}
	if len(c.Steps) > 0 {
		// With --steps the load is the step's, not the single-run setting.
		load = strings.SplitN(load, ",", 2)[0] + ", stepped (see Steps)"
	}
	return []kv{
		{"API", fmtOrDash(c.BaseURL), "the running stack that was loaded"},
		{"Shoppers", fmtInt(c.Users), "simulated users, each with its own JWT"},
		{"Requests per shopper", fmtInt(c.PerUser), "orders each shopper sends"},
		{"Load", load, "closed loop: a fixed number of requests in flight; open loop: a fixed arrival rate"},
		{"Stock", fmtInt(c.Stock), "units on sale in each step's fresh session"},
		{"Units per order", fmtInt(c.Quantity), ""},
		{"Per-user limit", fmtInt(c.Limit), "units one shopper may win"},
		{"Pay ratio", fmtPercent(c.PayRatio), "share of accepted orders the bench pays"},
		{"Pay timeout", fmtOrDash(c.PayTimeout), "unpaid orders close after this"},
	}
}

// ratioRows lists bench.Ratios in their order, then any ratio of the report
// this build does not know (written by another version), without a target.
func ratioRows(ratios, spread map[string]float64) []ratioRow {
	var rows []ratioRow
	for _, rt := range bench.Ratios {
		row := ratioRow{Name: rt.Name, Meaning: rt.Meaning, Value: "—", Target: rt.TargetWords(), Status: "absent", Spread: "—"}
		if sp, ok := spread[rt.Key]; ok {
			row.Spread = fmtNum(sp, 2)
		}
		if v, ok := ratios[rt.Key]; ok {
			row.Value = fmtNum(v, 2)
			row.Status = "missed"
			if rt.Met(v) { // NaN compares false: a NaN ratio is never "met"
				row.Status = "met"
			}
		}
		rows = append(rows, row)
	}
	var extra []string
	for k := range ratios {
		if _, known := bench.RatioByKey(k); !known {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		row := ratioRow{Name: k, Value: fmtNum(ratios[k], 2), Target: "—", Status: "absent", Spread: "—"}
		if sp, ok := spread[k]; ok {
			row.Spread = fmtNum(sp, 2)
		}
		rows = append(rows, row)
	}
	return rows
}

func baselineRows(b *bench.Baselines) []baselineRow {
	if b == nil {
		return nil
	}
	rows := []baselineRow{
		{"Bare Fiber handler", fmtRate(b.FiberRPS), "req/s", "a no-op handler answering the same JSON under the same load: the ceiling for any route here"},
		{"Admission script alone", fmtRate(b.LuaPerSecond), "calls/s", "the Redis admission Lua script called directly through go-redis at the same concurrency"},
		{"Temporal no-op workflow", fmtRate(b.TemporalNoopPerSecond), "workflows/s", "no-op workflows with one local activity, started and completed on the same Temporal server, first completion to last; the mean of a run before the steps and one after"},
	}
	if a := b.AdmissionOnly; a != nil {
		rows = append(rows, baselineRow{"Admission only (order tier off)", fmtRate(a.RequestsPerSecond), "req/s",
			"the last step's burst (same shoppers, requests and load) through the same API code with no workflow started; winners' accept p50 " +
				fmtMs(a.AcceptedP50) + " ms, p99 " + fmtMs(a.AcceptedP99) + " ms"})
	}
	return rows
}

func buildStep(n int, s bench.Step) stepView {
	v := stepView{
		N:                      n,
		Load:                   loadLabel(s),
		Requests:               fmtInt(s.Funnel.Requests),
		Duration:               fmtSeconds(s.DurationSeconds),
		Throughput:             fmtRate(s.Throughput),
		SoldOutThroughput:      fmtRate(s.SoldOutThroughput),
		SoldOutKeyedThroughput: "—",
		SellOut:                fmtSeconds(s.TimeToSellOutSeconds),
		AllWaitPay:             fmtSeconds(s.TimeToAllWaitPaySeconds),
		OrdersPerSecond:        fmtRate(s.OrdersPerSecond),
		CreationPerSecond:      fmtRate(s.CreationPerSecond),
		AcceptedP99:            "—",
		OK:                     s.InvariantsOK,
		Latency:                latencyChart(n, s),
		Funnel:                 funnelChart(n, s.Funnel),
		Outcomes:               outcomeRows(s.Latency),
		Reconcile:              reconcileRows(s.Reconcile),
	}
	if s.SoldOutKeyedThroughput > 0 {
		v.SoldOutKeyedThroughput = fmtRate(s.SoldOutKeyedThroughput)
	}
	if p, ok := s.Latency[bench.OutAccepted]; ok && p.Count > 0 {
		v.AcceptedP99 = fmtMs(p.P99)
	}
	return v
}

// loadLabel names a step's load level; closed and open loop read differently.
func loadLabel(s bench.Step) string {
	sale := ""
	if s.Sale != "" {
		sale = s.Sale + " sale, "
	}
	if s.Rate > 0 {
		return sale + fmtInt(s.Rate) + " req/s"
	}
	return sale + fmtInt(s.Concurrency) + " in flight"
}

// outcomeRows lists the step's outcomes in bench.Outcomes' order, then any
// code this build does not know, by name.
func outcomeRows(lat map[string]bench.Percentiles) []outcomeRow {
	var codes []string
	for _, o := range bench.Outcomes {
		if _, ok := lat[o.Code]; ok {
			codes = append(codes, o.Code)
		}
	}
	var extra []string
	for k := range lat {
		if bench.OutcomeName(k) == k {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	codes = append(codes, extra...)

	rows := make([]outcomeRow, 0, len(codes))
	for _, c := range codes {
		p := lat[c]
		rows = append(rows, outcomeRow{Name: bench.OutcomeName(c), Code: c, Count: fmtInt(p.Count),
			P50: fmtMs(p.P50), P95: fmtMs(p.P95), P99: fmtMs(p.P99), Max: fmtMs(p.Max)})
	}
	return rows
}

// reconcileRows lists the reconcile report's fields by their JSON
// names, as the API answers them and the JSON report holds them.
func reconcileRows(r *seckill.Report) []kv {
	if r == nil {
		return nil
	}
	var m map[string]any
	raw, _ := json.Marshal(r)
	_ = json.Unmarshal(raw, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // map order is random; the page must be reproducible
	rows := make([]kv, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, kv{Key: k, Value: fmtAny(m[k])})
	}
	return rows
}
