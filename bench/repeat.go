package bench

import (
	"math"
	"sort"
)

// Repeat is one round of an interleaved run (--repeat): the baselines, then
// the subject's load steps, and the ratios of that round.
type Repeat struct {
	N            int                `json:"n"`
	Baselines    *Baselines         `json:"baselines,omitempty"`
	Ratios       map[string]float64 `json:"ratios"`
	RedisAOF     map[string]AOFRun  `json:"redis_aof,omitempty"`
	InvariantsOK bool               `json:"invariants_ok"`
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

// medianBaselines is the baseline of each kind, median over the rounds
// (the admission-only one over the rounds that measured it).
func medianBaselines(bs []*Baselines) *Baselines {
	var f, l, t, tBefore, tAfter, tCPU, tShare, aRPS, a50, a99, aRef, uRPS, uRef, rRPS, r50, r99 []float64
	for _, b := range bs {
		if b == nil {
			continue
		}
		f, l, t = append(f, b.FiberRPS), append(l, b.LuaPerSecond), append(t, b.TemporalNoopPerSecond)
		if b.TemporalNoopAfter > 0 {
			tBefore, tAfter = append(tBefore, b.TemporalNoopBefore), append(tAfter, b.TemporalNoopAfter)
		}
		if b.TemporalNoopCPUMs > 0 {
			tCPU, tShare = append(tCPU, b.TemporalNoopCPUMs), append(tShare, b.TemporalNoopShare)
		}
		if a := b.AdmissionOnly; a != nil {
			aRPS, a50, a99 = append(aRPS, a.RequestsPerSecond), append(a50, a.AcceptedP50), append(a99, a.AcceptedP99)
			aRef = append(aRef, a.RefusedP50)
			if u := a.Unkeyed; u != nil {
				uRPS, uRef = append(uRPS, u.RequestsPerSecond), append(uRef, u.RefusedP50)
			}
		}
		if a := b.AdmissionOnlyRisk; a != nil {
			rRPS, r50, r99 = append(rRPS, a.RequestsPerSecond), append(r50, a.AcceptedP50), append(r99, a.AcceptedP99)
		}
	}
	if len(f) == 0 {
		return nil
	}
	m := &Baselines{FiberRPS: medianOf(f), LuaPerSecond: medianOf(l), TemporalNoopPerSecond: medianOf(t)}
	if len(tAfter) > 0 {
		m.TemporalNoopBefore, m.TemporalNoopAfter = medianOf(tBefore), medianOf(tAfter)
	}
	if len(tCPU) > 0 {
		m.TemporalNoopCPUMs, m.TemporalNoopShare = medianOf(tCPU), medianOf(tShare)
	}
	if len(aRPS) > 0 {
		m.AdmissionOnly = &AdmissionOnly{RequestsPerSecond: medianOf(aRPS), AcceptedP50: medianOf(a50), AcceptedP99: medianOf(a99),
			RefusedP50: medianOf(aRef)}
		if len(uRPS) > 0 {
			m.AdmissionOnly.Unkeyed = &AdmissionOnly{RequestsPerSecond: medianOf(uRPS), RefusedP50: medianOf(uRef)}
		}
		m.AdmissionOnly.CPU = medianCPU(bs, func(a *AdmissionOnly) *BurstCPU { return a.CPU })
		if m.AdmissionOnly.Unkeyed != nil {
			m.AdmissionOnly.Unkeyed.CPU = medianCPU(bs, func(a *AdmissionOnly) *BurstCPU {
				if a.Unkeyed == nil {
					return nil
				}
				return a.Unkeyed.CPU
			})
		}
	}
	if len(rRPS) > 0 {
		m.AdmissionOnlyRisk = &AdmissionOnly{RequestsPerSecond: medianOf(rRPS), AcceptedP50: medianOf(r50), AcceptedP99: medianOf(r99)}
	}
	m.AdmissionOnlyTraced = medianAdmission(bs, func(b *Baselines) *AdmissionOnly { return b.AdmissionOnlyTraced })
	m.AdmissionOnlySampled = medianAdmission(bs, func(b *Baselines) *AdmissionOnly { return b.AdmissionOnlySampled })
	return m
}

// medianCPU is the median of the rounds' admission-only CPU per request
// (of), field by field; nil when no round has it.
func medianCPU(bs []*Baselines, of func(*AdmissionOnly) *BurstCPU) *BurstCPU {
	var api, red, bench, machine []float64
	for _, b := range bs {
		if b == nil || b.AdmissionOnly == nil {
			continue
		}
		if c := of(b.AdmissionOnly); c != nil {
			api, red, bench, machine = append(api, c.API), append(red, c.Redis), append(bench, c.Bench), append(machine, c.Machine)
		}
	}
	if len(api) == 0 {
		return nil
	}
	return &BurstCPU{API: medianOf(api), Redis: medianOf(red), Bench: medianOf(bench), Machine: medianOf(machine)}
}
