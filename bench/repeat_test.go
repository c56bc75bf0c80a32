package bench

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAggregateRatios(t *testing.T) {
	med, spread := AggregateRatios([]map[string]float64{
		{"admission_vs_fiber": 0.5, "soldout_vs_fiber": 0.8, "orders_vs_temporal_noop": 0.9},
		{"admission_vs_fiber": 0.4, "soldout_vs_fiber": 1.0},
		{"admission_vs_fiber": 0.6, "soldout_vs_fiber": 0.9, "orders_vs_temporal_noop": math.NaN()},
	})
	require.InDelta(t, 0.5, med["admission_vs_fiber"], 1e-9)
	require.InDelta(t, 0.4, spread["admission_vs_fiber"], 1e-9) // (0.6−0.4)/0.5
	require.InDelta(t, 0.9, med["soldout_vs_fiber"], 1e-9)
	require.InDelta(t, 0.2/0.9, spread["soldout_vs_fiber"], 1e-9)
	// Only one round measured it (the NaN is dropped): its value, spread 0.
	require.InDelta(t, 0.9, med["orders_vs_temporal_noop"], 1e-9)
	require.Zero(t, spread["orders_vs_temporal_noop"])

	// An even count: the mean of the middle two.
	med, spread = AggregateRatios([]map[string]float64{{"a": 1}, {"a": 4}, {"a": 2}, {"a": 3}})
	require.InDelta(t, 2.5, med["a"], 1e-9)
	require.InDelta(t, 3/2.5, spread["a"], 1e-9)

	// A median of 0 has no finite spread: the key is left out.
	med, spread = AggregateRatios([]map[string]float64{{"a": 0}, {"a": 0}})
	require.Zero(t, med["a"])
	require.NotContains(t, spread, "a")

	med, spread = AggregateRatios(nil)
	require.Empty(t, med)
	require.Empty(t, spread)
}

func TestStepRatiosAndMedianBaselines(t *testing.T) {
	b := medianBaselines([]*Baselines{
		{FiberRPS: 100, LuaPerSecond: 10, TemporalNoopPerSecond: 1, TemporalNoopBefore: 1.5, TemporalNoopAfter: 0.5,
			AdmissionOnly: &AdmissionOnly{RequestsPerSecond: 80, AcceptedP50: 4, AcceptedP99: 20}},
		nil,
		{FiberRPS: 300, LuaPerSecond: 30, TemporalNoopPerSecond: 3, TemporalNoopBefore: 3.5, TemporalNoopAfter: 2.5},
		{FiberRPS: 200, LuaPerSecond: 20, TemporalNoopPerSecond: 2, TemporalNoopBefore: 2.5, TemporalNoopAfter: 1.5,
			AdmissionOnly: &AdmissionOnly{RequestsPerSecond: 120, AcceptedP50: 6, AcceptedP99: 40}},
	})
	require.Equal(t, &Baselines{FiberRPS: 200, LuaPerSecond: 20, TemporalNoopPerSecond: 2, TemporalNoopBefore: 2.5, TemporalNoopAfter: 1.5,
		AdmissionOnly: &AdmissionOnly{RequestsPerSecond: 100, AcceptedP50: 5, AcceptedP99: 30}}, b)
	require.Nil(t, medianBaselines([]*Baselines{nil}))
	// The CPU per request is a median per field (the machine's is not the
	// sum of the others'), the unkeyed bursts' apart from the keyed ones'.
	cpu := func(api, redis float64) *BurstCPU {
		return &BurstCPU{API: api, Redis: redis, Bench: 30, Machine: api + redis + 30}
	}
	keyed := medianBaselines([]*Baselines{
		{AdmissionOnly: &AdmissionOnly{CPU: cpu(50, 9), Unkeyed: &AdmissionOnly{CPU: cpu(33, 1)}}},
		{AdmissionOnly: &AdmissionOnly{CPU: cpu(48, 8), Unkeyed: &AdmissionOnly{CPU: cpu(35, 1)}}},
		{AdmissionOnly: &AdmissionOnly{CPU: cpu(60, 7), Unkeyed: &AdmissionOnly{CPU: cpu(34, 2)}}},
	}).AdmissionOnly
	require.Equal(t, &BurstCPU{API: 50, Redis: 8, Bench: 30, Machine: 89}, keyed.CPU)
	require.Equal(t, &BurstCPU{API: 34, Redis: 1, Bench: 30, Machine: 66}, keyed.Unkeyed.CPU)
	// The orders' ratio is the tier's own pace (first row to last), not
	// the accepted orders over the time since the burst began.
	r := stepRatios(Step{Throughput: 50, SoldOutThroughput: 150, OrdersPerSecond: 0.5, CreationPerSecond: 1,
		Latency: map[string]Percentiles{"accepted": {P50: 10, P99: 45}}}, b)
	require.Equal(t, map[string]float64{"admission_vs_fiber": 0.25, "soldout_vs_fiber": 0.75, "orders_vs_temporal_noop": 0.5,
		"burst_vs_admission_only": 0.5, "accept_p50_vs_admission_only": 2, "accept_p99_vs_admission_only": 1.5}, r)
	p50, ok := RatioByKey("accept_p50_vs_admission_only")
	require.True(t, ok)
	require.True(t, p50.Met(1.3)) // an upper bound
	require.False(t, p50.Met(1.4))
	fiber, _ := RatioByKey("admission_vs_fiber")
	require.True(t, fiber.Met(0.5)) // a lower bound
	require.False(t, fiber.Met(math.NaN()))
	require.Empty(t, stepRatios(Step{}, nil))
}

// With keys: the keyed burst against the unkeyed one beside it in the
// admission-only API, the losers from the sell-out on, and the sold-out
// bursts against the Fiber handler measured between their slices.
func TestKeyedRatios(t *testing.T) {
	b := &Baselines{FiberRPS: 1000, AdmissionOnly: &AdmissionOnly{RequestsPerSecond: 450, RefusedP50: 13.7,
		Losers: &Losers{PerSecond: 400}, Unkeyed: &AdmissionOnly{RequestsPerSecond: 1000, RefusedP50: 4.1, Losers: &Losers{PerSecond: 800}}}}
	r := stepRatios(Step{SoldOutThroughput: 600, SoldOutKeyedThroughput: 300, SoldOutFiberThroughput: 750,
		Losers: &Losers{PerSecond: 900}}, b)
	for k, v := range map[string]float64{"burst_keyed_vs_unkeyed": 0.45, "losers_keyed_vs_unkeyed": 0.5,
		"refused_p50_keyed_vs_unkeyed": 13.7 / 4.1, "losers_vs_fiber": 0.9, "soldout_vs_fiber": 0.8,
		"soldout_keyed_vs_fiber": 0.4, "soldout_keyed_vs_unkeyed": 0.5} {
		require.InDelta(t, v, r[k], 1e-9, k)
	}
	// Fiber sent the keyed requests too: the keyed burst is divided by that.
	r = stepRatios(Step{SoldOutThroughput: 600, SoldOutKeyedThroughput: 300, SoldOutFiberThroughput: 750,
		SoldOutFiberKeyedThroughput: 500}, b)
	require.InDelta(t, 0.8, r["soldout_vs_fiber"], 1e-9)
	require.InDelta(t, 0.6, r["soldout_keyed_vs_fiber"], 1e-9)
	// Fiber sent the step's burst just before it: the burst and its losers
	// are divided by that, not by the round's baseline.
	r = stepRatios(Step{Throughput: 540, FiberThroughput: 1200, Losers: &Losers{PerSecond: 900}}, b)
	require.InDelta(t, 0.45, r["admission_vs_fiber"], 1e-9)
	require.InDelta(t, 0.75, r["losers_vs_fiber"], 1e-9)
	refused, _ := RatioByKey("refused_p50_keyed_vs_unkeyed")
	require.False(t, refused.Met(r["refused_p50_keyed_vs_unkeyed"]))
	b.AdmissionOnly.Unkeyed = nil
	require.NotContains(t, stepRatios(Step{}, b), "burst_keyed_vs_unkeyed", "--keys=false: no pair")
}

// The losers are the requests sent from the last win's answer on.
func TestAfterSellOut(t *testing.T) {
	ms := time.Millisecond
	rs := []result{{at: 0, latency: 5 * ms, outcome: OutAccepted}, {at: 10 * ms, latency: 10 * ms, outcome: OutAccepted},
		{at: 15 * ms, latency: 1 * ms, outcome: OutSoldOutRedis}, {at: 20 * ms, latency: 2 * ms, outcome: OutSoldOutMemory},
		{at: 50 * ms, latency: 4 * ms, outcome: OutSoldOutMemory}}
	l := afterSellOut(rs, 120*ms)
	require.Equal(t, 2, l.Count)
	require.InDelta(t, 2/0.1, l.PerSecond, 1e-9)
	require.Equal(t, 4.0, l.P50)
	require.Equal(t, map[string]int{OutSoldOutMemory: 2}, l.Outcomes)
	require.Nil(t, afterSellOut(rs[2:], 120*ms), "never sold out")
	require.Equal(t, 2.0, refusals(rs).P50)
}

// The no-op baseline run after the steps joins the one before them: the
// mean is the server's pace while the steps ran.
func TestBracketNoop(t *testing.T) {
	b := &Baselines{TemporalNoopPerSecond: 300, TemporalNoopBefore: 300, TemporalNoopCPUMs: 4, TemporalNoopShare: 0.8}
	b.bracket(noopRun{perSecond: 200, cpuMs: 6, share: 0.7})
	require.Equal(t, &Baselines{TemporalNoopPerSecond: 250, TemporalNoopBefore: 300, TemporalNoopAfter: 200,
		TemporalNoopCPUMs: 5, TemporalNoopShare: 0.75}, b)
	remote := &Baselines{TemporalNoopPerSecond: 300, TemporalNoopBefore: 300}
	remote.bracket(noopRun{perSecond: 100})
	require.Equal(t, &Baselines{TemporalNoopPerSecond: 200, TemporalNoopBefore: 300, TemporalNoopAfter: 100}, remote,
		"a server on another machine: no CPU figures to mix")
}

// The workflow-start latency of a step is read from the API's histogram
// difference, interpolated inside buckets like histogram_quantile.
func TestStartLatency(t *testing.T) {
	before := startHistogram{bounds: []float64{0.01, 0.1, 1}, counts: []uint64{5, 5, 5}, total: 5}
	after := startHistogram{bounds: []float64{0.01, 0.1, 1}, counts: []uint64{55, 104, 105}, total: 105}
	got := startLatency(before, after)
	require.Equal(t, 100, got.Starts)
	require.InDelta(t, 10, got.P50Ms, 1e-9)
	require.InDelta(t, 100, got.P99Ms, 1e-9)
	slow := startHistogram{bounds: after.bounds, counts: []uint64{5, 5, 5}, total: 15}
	require.Equal(t, 1000.0, startLatency(before, slow).P99Ms, "beyond the last bound: the bound")
	require.Equal(t, &StartLatency{}, startLatency(before, before))
}
