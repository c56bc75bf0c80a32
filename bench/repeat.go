package bench

import (
	"math"
	"sort"
)

// RatioKeys are the ratios a run with baselines reports (DESIGN.md, Tests).
var RatioKeys = []string{"admission_vs_fiber", "soldout_vs_fiber", "orders_vs_temporal_noop"}

// Repeat is one round of an interleaved run (--repeat): the baselines, then
// the subject's load steps, and the ratios of that round.
type Repeat struct {
	N            int                `json:"n"`
	Baselines    *Baselines         `json:"baselines,omitempty"`
	Ratios       map[string]float64 `json:"ratios"`
	RedisAOF     map[string]AOFRun  `json:"redis_aof,omitempty"`
	InvariantsOK bool               `json:"invariants_ok"`
}

// stepRatios are one round's ratios: the last step against that round's
// baselines (nil baselines: none).
func stepRatios(last Step, b *Baselines) map[string]float64 {
	out := map[string]float64{}
	if b == nil {
		return out
	}
	if b.FiberRPS > 0 {
		out["admission_vs_fiber"] = last.Throughput / b.FiberRPS
		out["soldout_vs_fiber"] = last.SoldOutThroughput / b.FiberRPS
	}
	if b.TemporalNoopPerSecond > 0 {
		out["orders_vs_temporal_noop"] = last.OrdersPerSecond / b.TemporalNoopPerSecond
	}
	return out
}

// AggregateRatios returns, for every key present in any round, the median
// of its values over the rounds and their spread, (max − min) / median.
// Rounds that lack a key (e.g. no order reached WAIT_PAY) are left out of
// that key; NaN and infinite values are ignored. A single value has spread
// 0; a median of 0 gives no spread (it would be infinite).
func AggregateRatios(rounds []map[string]float64) (median, spread map[string]float64) {
	vals := map[string][]float64{}
	for _, r := range rounds {
		for k, v := range r {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			vals[k] = append(vals[k], v)
		}
	}
	median, spread = map[string]float64{}, map[string]float64{}
	for k, vs := range vals {
		m := medianOf(vs)
		median[k] = m
		if m != 0 {
			lo, hi := minMax(vs)
			spread[k] = (hi - lo) / m
		}
	}
	return median, spread
}

// medianOf returns the median of vs (the mean of the middle two for an even
// count); vs is not modified. 0 for no values.
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func minMax(vs []float64) (lo, hi float64) {
	lo, hi = vs[0], vs[0]
	for _, v := range vs[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// medianBaselines is the baseline of each kind, median over the rounds.
func medianBaselines(bs []*Baselines) *Baselines {
	var f, l, t []float64
	for _, b := range bs {
		if b != nil {
			f, l, t = append(f, b.FiberRPS), append(l, b.LuaPerSecond), append(t, b.TemporalNoopPerSecond)
		}
	}
	if len(f) == 0 {
		return nil
	}
	return &Baselines{FiberRPS: medianOf(f), LuaPerSecond: medianOf(l), TemporalNoopPerSecond: medianOf(t)}
}
