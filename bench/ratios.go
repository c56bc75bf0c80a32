package bench

import "fmt"

// Ratio is one figure of the subject divided by a baseline measured in the
// same run: on a shared, noisy machine the absolute figures move a lot from
// run to run, their ratios much less. The table, the HTML report and the
// --repeat aggregation all read this one list, so a ratio and its target are
// spelled once.
type Ratio struct {
	// Key names the ratio in the JSON (ratios, ratios_spread).
	Key string
	// Name and Meaning say it for people (the HTML report).
	Name, Meaning string
	// Target is the bound the design sets (issues 6 and 10); AtMost says
	// it is an upper bound (latencies: lower is better), otherwise a lower one.
	Target float64
	AtMost bool
	// of computes the ratio from a round's last step and baselines; false
	// when a figure it needs is missing or zero.
	of func(last Step, b *Baselines) (float64, bool)
}

// Met says whether v meets the target; NaN never does.
func (r Ratio) Met(v float64) bool {
	if r.AtMost {
		return v <= r.Target
	}
	return v >= r.Target
}

// TargetWords is the target as the reports print it, e.g. "≥ 0.50".
func (r Ratio) TargetWords() string {
	if r.AtMost {
		return fmt.Sprintf("≤ %.2f", r.Target)
	}
	return fmt.Sprintf("≥ %.2f", r.Target)
}

// Ratios are the ratios a run with baselines reports, in the order of the
// request path: admission, the sold-out fast path, the winners' answer
// against the admission-only API, order creation.
var Ratios = []Ratio{
	{Key: "admission_vs_fiber", Name: "Admission vs bare Fiber",
		Meaning: "burst throughput of the real order route against a no-op Fiber handler sent the same burst just before it",
		Target:  0.5, of: func(s Step, b *Baselines) (float64, bool) { return div(s.Throughput, stepFiber(s, b)) }},
	{Key: "burst_keyed_vs_unkeyed", Name: "Keyed vs unkeyed burst",
		Meaning: "the admission-only API's burst with a UUIDv7 Idempotency-Key on every request, stamped as it is sent, against the same burst without keys on a sale of its own in the same process and round: what the shop's keys cost the front door (the order tier, the same for both, left out)",
		Target:  0.85, of: keyedPair(func(k, u *AdmissionOnly) (float64, bool) { return div(k.RequestsPerSecond, u.RequestsPerSecond) })},
	{Key: "losers_keyed_vs_unkeyed", Name: "Keyed vs unkeyed losers after the sell-out",
		Meaning: "requests/s of the same two bursts counted from the sell-out on (the last win's answer): the keyed losers of a sale's first second against the unkeyed ones",
		Target:  0.85, of: keyedPair(func(k, u *AdmissionOnly) (float64, bool) {
			if k.Losers == nil || u.Losers == nil {
				return 0, false
			}
			return div(k.Losers.PerSecond, u.Losers.PerSecond)
		})},
	{Key: "refused_p50_keyed_vs_unkeyed", Name: "Refusals' p50, keyed vs unkeyed",
		Meaning: "the refusals' median latency in the keyed burst against the unkeyed one: a key must not make a loser wait",
		Target:  1.2, AtMost: true, of: keyedPair(func(k, u *AdmissionOnly) (float64, bool) { return div(k.RefusedP50, u.RefusedP50) })},
	{Key: "losers_vs_fiber", Name: "Losers after the sell-out vs bare Fiber",
		Meaning: "requests/s of the step's burst (keyed under --keys) counted from the sell-out on, against a no-op Fiber handler sent the same burst just before it: the losers of the sale's first second, not only a second later",
		Target:  0.85, of: func(s Step, b *Baselines) (float64, bool) {
			if s.Losers == nil {
				return 0, false
			}
			return div(s.Losers.PerSecond, stepFiber(s, b))
		}},
	{Key: "soldout_vs_fiber", Name: "Sold-out vs bare Fiber",
		Meaning: "once sold out, rejections come from memory and should be nearly as cheap as a no-op handler (the Fiber handler measured in slices interleaved with the sold-out burst's)",
		Target:  0.85, of: func(s Step, b *Baselines) (float64, bool) { return div(s.SoldOutThroughput, soldOutFiber(s, b)) }},
	{Key: "soldout_keyed_vs_fiber", Name: "Keyed sold-out vs bare Fiber",
		Meaning: "the sold-out burst with a fresh Idempotency-Key on every request, as the shop sends them: answered from memory too, so nearly as cheap as a no-op handler (sent the same keyed requests, in slices of its own)",
		Target:  0.85, of: keyed(func(s Step, b *Baselines) (float64, bool) {
			return div(s.SoldOutKeyedThroughput, soldOutFiberKeyed(s, b))
		})},
	{Key: "soldout_keyed_vs_unkeyed", Name: "Keyed vs unkeyed sold-out",
		Meaning: "the keyed sold-out burst against the unkeyed one run just before it: a key must not make a loser dearer",
		Target:  0.85, of: keyed(func(s Step, _ *Baselines) (float64, bool) { return div(s.SoldOutKeyedThroughput, s.SoldOutThroughput) })},
	{Key: "burst_vs_admission_only", Name: "Burst vs admission only",
		Meaning: "requests/s of the burst against the same burst through the same API code with the order tier switched off: what starting the orders costs the front door (within 1.25×)",
		Target:  0.8, of: vsAdmissionOnly(func(s Step) float64 { return s.Throughput },
			func(a *AdmissionOnly) float64 { return a.RequestsPerSecond })},
	{Key: "risk_vs_admission_only", Name: "Risk check vs admission only",
		Meaning: "the admission-only burst with the risk check on (a risk service that allows everyone, each shopper asked once) against the same burst without it: what the hook costs the front door (--risk)",
		Target:  0.9, of: func(_ Step, b *Baselines) (float64, bool) {
			if b.AdmissionOnly == nil || b.AdmissionOnlyRisk == nil {
				return 0, false
			}
			return div(b.AdmissionOnlyRisk.RequestsPerSecond, b.AdmissionOnly.RequestsPerSecond)
		}},
	{Key: "tracing_always_vs_admission_only", Name: "Traced (all sampled) vs admission only",
		Meaning: "the admission-only burst traced to an OTLP endpoint with every request sampled (its span and its Redis calls') against the same burst untraced: what tracing everything costs the front door (--tracing)",
		Target:  0.5, of: vsUntraced(func(b *Baselines) *AdmissionOnly { return b.AdmissionOnlyTraced })},
	{Key: "tracing_1pct_vs_admission_only", Name: "Traced (1 % sampled) vs admission only",
		Meaning: "the same with 1 % of the requests sampled (parentbased_traceidratio 0.01), the setting for a sale: within 0.9× of untraced (--tracing)",
		Target:  0.9, of: vsUntraced(func(b *Baselines) *AdmissionOnly { return b.AdmissionOnlySampled })},
	{Key: "accept_p50_vs_admission_only", Name: "Winners' p50 vs admission only",
		Meaning: "winners' accept p50 against the same burst with the order tier switched off: a winner's answer must not wait for Temporal",
		Target:  1.3, AtMost: true, of: vsAdmissionOnly(func(s Step) float64 { return s.Latency[OutAccepted].P50 },
			func(a *AdmissionOnly) float64 { return a.AcceptedP50 })},
	{Key: "accept_p99_vs_admission_only", Name: "Winners' p99 vs admission only",
		Meaning: "winners' accept p99 against the same burst with the order tier switched off",
		Target:  1.3, AtMost: true, of: vsAdmissionOnly(func(s Step) float64 { return s.Latency[OutAccepted].P99 },
			func(a *AdmissionOnly) float64 { return a.AcceptedP99 })},
	{Key: "items_vs_one_item", Name: "A sale of sizes vs one item",
		Meaning: "the burst of a sale of N items (--items N: the same stock, shoppers and load, each request naming an item in turn) against the one-item step run just before it in the same round",
		Target:  0.85, of: itemsOfTheRound},
	{Key: "orders_vs_temporal_noop", Name: "Orders vs Temporal no-op",
		Meaning: "orders reaching WAIT_PAY per second, first order created to last, against no-op workflows per second, from the first start to the last completion: order creation should be bound by Temporal itself",
		Target:  0.7, of: func(s Step, b *Baselines) (float64, bool) { return div(s.CreationPerSecond, b.TemporalNoopPerSecond) }},
	{Key: "closes_vs_temporal_noop", Name: "Closes vs Temporal no-op",
		Meaning: "unpaid orders closed with stock back per second, from the first pay deadline to the last close, against no-op workflows per second (bounded by the pace of the deadlines when the closes keep up)",
		Target:  0.6, of: func(s Step, b *Baselines) (float64, bool) {
			if s.Closing == nil {
				return 0, false
			}
			return div(s.Closing.PerSecond, b.TemporalNoopPerSecond)
		}},
	{Key: "orders_vs_temporal_noop_cpu", Name: "Temporal CPU: no-op vs order",
		Meaning: "the Temporal server's CPU time per no-op workflow against its CPU time per order created, with nothing else running (--pay-after-creation; measured when the server runs on this machine): 1 means creating an order costs the server no more than a no-op, whatever CPU the rest of the stack took from it",
		Target:  0.9, of: vsNoopCPU(func(c *TemporalCPU) float64 { return c.CreateMs })},
	{Key: "closes_vs_temporal_noop_cpu", Name: "Temporal CPU: no-op vs close",
		Meaning: "the Temporal server's CPU time per no-op workflow against its CPU time per order closed by its pay timer",
		Target:  0.9, of: vsNoopCPU(func(c *TemporalCPU) float64 { return c.CloseMs })},
}

// itemsOfTheRound is no figure of the one-item step: the round sets
// items_vs_one_item from its sale of items (measureItems).
func itemsOfTheRound(Step, *Baselines) (float64, bool) { return 0, false }

// RatioKeys are the keys of Ratios, in order.
var RatioKeys = func() []string {
	keys := make([]string, len(Ratios))
	for i, r := range Ratios {
		keys[i] = r.Key
	}
	return keys
}()

// RatioByKey returns the ratio named key, false for one this build does
// not know (a report written by another version).
func RatioByKey(key string) (Ratio, bool) {
	for _, r := range Ratios {
		if r.Key == key {
			return r, true
		}
	}
	return Ratio{}, false
}

// vsAdmissionOnly is a ratio of a figure of the step to the same figure of
// the admission-only baseline, absent when that baseline was not measured.
func vsAdmissionOnly(subject func(Step) float64, base func(*AdmissionOnly) float64) func(Step, *Baselines) (float64, bool) {
	return func(s Step, b *Baselines) (float64, bool) {
		if b.AdmissionOnly == nil {
			return 0, false
		}
		return div(subject(s), base(b.AdmissionOnly))
	}
}

// vsNoopCPU is the Temporal server's CPU per no-op workflow over its CPU
// per order in one phase of the step, absent when either was not measured.
func vsNoopCPU(phase func(*TemporalCPU) float64) func(Step, *Baselines) (float64, bool) {
	return func(s Step, b *Baselines) (float64, bool) {
		if s.TemporalCPU == nil || b.TemporalNoopCPUMs <= 0 {
			return 0, false
		}
		return div(b.TemporalNoopCPUMs, phase(s.TemporalCPU))
	}
}

// stepFiber is the Fiber figure the step's burst is divided by: the one
// sent the same burst just before it, else the round's baseline.
func stepFiber(s Step, b *Baselines) float64 {
	if s.FiberThroughput > 0 {
		return s.FiberThroughput
	}
	return b.FiberRPS
}

// soldOutFiber is the Fiber figure the sold-out bursts are divided by: the
// one measured beside them, else the round's baseline.
func soldOutFiber(s Step, b *Baselines) float64 {
	if s.SoldOutFiberThroughput > 0 {
		return s.SoldOutFiberThroughput
	}
	return b.FiberRPS
}

// soldOutFiberKeyed is the Fiber figure the keyed sold-out burst is
// divided by: the one sent the same keyed requests beside it, else
// soldOutFiber (a report from before the keyed slices).
func soldOutFiberKeyed(s Step, b *Baselines) float64 {
	if s.SoldOutFiberKeyedThroughput > 0 {
		return s.SoldOutFiberKeyedThroughput
	}
	return soldOutFiber(s, b)
}

// keyedPair is a ratio of the admission-only baseline's keyed burst to its
// unkeyed one, absent when either was not measured (--keys=false).
func keyedPair(of func(keyed, unkeyed *AdmissionOnly) (float64, bool)) func(Step, *Baselines) (float64, bool) {
	return func(_ Step, b *Baselines) (float64, bool) {
		if b.AdmissionOnly == nil || b.AdmissionOnly.Unkeyed == nil {
			return 0, false
		}
		return of(b.AdmissionOnly, b.AdmissionOnly.Unkeyed)
	}
}

// keyed is absent for a step run without keys (--keys=false).
func keyed(of func(Step, *Baselines) (float64, bool)) func(Step, *Baselines) (float64, bool) {
	return func(s Step, b *Baselines) (float64, bool) {
		if s.SoldOutKeyedThroughput <= 0 {
			return 0, false
		}
		return of(s, b)
	}
}

// div is a/b, false when b is not positive (no baseline: no ratio).
func div(a, b float64) (float64, bool) {
	if b <= 0 {
		return 0, false
	}
	return a / b, true
}

// stepRatios are one round's ratios: the last step against that round's
// baselines (nil baselines: none).
func stepRatios(last Step, b *Baselines) map[string]float64 {
	out := map[string]float64{}
	if b == nil {
		return out
	}
	for _, r := range Ratios {
		if v, ok := r.of(last, b); ok {
			out[r.Key] = v
		}
	}
	return out
}
