package bench_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/bench/htmlreport"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
)

// runBench runs the bench (its progress on stderr under -v); the run must
// succeed with the invariants holding.
func runBench(t *testing.T, cfg bench.Config) *bench.Report {
	t.Helper()
	if testing.Verbose() {
		cfg.Progress = os.Stderr
	}
	rep, err := bench.Run(context.Background(), cfg)
	require.NoError(t, err)
	require.True(t, rep.InvariantsOK, "%v", rep.Problems)
	return rep
}

// stackConfig is a bench of the Env's stack: its API and secrets, one
// unit per order and per shopper, 30 s for the orders to settle.
func stackConfig(e *testenv.Env) bench.Config {
	return bench.Config{BaseURL: e.BaseURL, AdminToken: testenv.AdminToken, JWTSecret: testenv.JWTSecret,
		WebhookSecret: testenv.WebhookSecret, Quantity: 1, Limit: 1, Settle: 30 * time.Second}
}

// A small bench against the real stack: two load steps sell out exactly,
// every funnel adds up, the unpaid orders time out, the invariants hold,
// and the baselines give the three ratios.
func TestBenchSmallRun(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 12 * time.Second})
	cfg := stackConfig(e)
	// Enough shoppers that every burst sends requests after its last win's
	// answer, which the losers' ratios count: with 80, a slow winner's
	// answer sometimes came after the last request was sent.
	cfg.Users, cfg.PerUser, cfg.Concurrency, cfg.Steps, cfg.Stock = 200, 2, 16, []int{8, 32}, 20
	cfg.PayRatio, cfg.PayTimeout = 0.5, 12*time.Second
	cfg.Baselines = &bench.BaselineConfig{RedisAddr: e.RedisAddr, TemporalAddr: e.TemporalAddr,
		TemporalNamespace: "default", NoopWorkflows: 20, MySQLDSN: e.DSN, Exec: testenv.LabBinary(t)}
	cfg.TemporalAddr, cfg.TemporalNamespace, cfg.CostSample, cfg.Captchas, cfg.Keys, cfg.Risk = e.TemporalAddr, "default", 2, 12, true, true
	cfg.Tracing = true
	runRefundRelay(t, e)
	rep := runBench(t, cfg)
	require.Len(t, rep.Steps, 2)
	require.NotNil(t, rep.Captcha, "--captchas draws the human check")
	require.Equal(t, 12, rep.Captcha.Drawn)
	require.Positive(t, rep.Captcha.PerSecond)
	require.Positive(t, rep.Captcha.VsSoldOut)
	for _, s := range rep.Steps {
		require.NotNil(t, s.StartLatency, "the API's workflow starts, from its histogram")
		require.GreaterOrEqual(t, s.StartLatency.Starts, 20, "a start per winner (and any retried)")
	}
	for _, s := range rep.Steps {
		f := s.Funnel
		require.Equal(t, 400, f.Requests)
		require.Equal(t, 20, f.Accepted)
		require.Equal(t, f.Requests, f.Accepted+f.SoldOutMemory+f.SoldOutRedis+f.LimitExceeded+f.RateLimited+f.Window+f.OtherErrors)
		require.Zero(t, f.OtherErrors)
		require.Equal(t, 20, f.OrdersCreated)
		require.Equal(t, 10, f.Paid)
		require.Equal(t, 10, f.Closed)
		require.Equal(t, 2, f.Cancelled)
		require.Equal(t, 2, f.Refunded, "refunded by the bench as an operator, for their cost")
		require.Positive(t, s.Throughput)
		require.Positive(t, s.SoldOutThroughput)
		require.Positive(t, s.FiberThroughput, "bare Fiber sent the burst just before it")
		require.Positive(t, s.SoldOutKeyedThroughput)
		require.Positive(t, s.SoldOutKeyedFromMemory, "keyed losers of a sold-out sale are answered from memory")
		require.Positive(t, s.SoldOutFiberThroughput, "bare Fiber measured beside the sold-out burst")
		require.Positive(t, s.SoldOutFiberKeyedThroughput, "and sent the keyed requests too")
		require.Positive(t, s.OrdersPerSecond)
		require.Positive(t, s.CreationPerSecond)
		require.LessOrEqual(t, s.CreatedDuringBurst, f.OrdersCreated)
		require.LessOrEqual(t, s.PaidDuringCreation, f.Paid)
		require.NotNil(t, s.Closing, "the unpaid orders' pay timers")
		require.NotNil(t, s.TemporalCPU, "the test's Temporal server runs on this machine")
		require.Positive(t, s.TemporalCPU.CreateAndPayMs, "shoppers paid as the orders showed WAIT_PAY")
		require.Zero(t, s.TemporalCPU.CreateMs)
		require.Positive(t, s.TemporalCPU.CloseMs)
		require.Positive(t, s.TemporalCPU.CreateShare)
		require.LessOrEqual(t, s.TemporalCPU.CreateShare, 1.0)
		require.Equal(t, 8, s.Closing.Orders, "10 unpaid, 2 of them cancelled")
		require.Positive(t, s.Closing.PerSecond)
		require.NotEmpty(t, s.Timeline)
		require.Equal(t, 20, s.Latency["accepted"].Count)
	}
	// The admission-only baseline: the same burst through an in-process
	// API with no order tier.
	require.Positive(t, rep.Baselines.TemporalNoopBefore, "the no-op baseline before the steps")
	require.Positive(t, rep.Baselines.TemporalNoopAfter, "and after them")
	require.InDelta(t, (rep.Baselines.TemporalNoopBefore+rep.Baselines.TemporalNoopAfter)/2, rep.Baselines.TemporalNoopPerSecond, 1e-9)
	require.NotNil(t, rep.Baselines.AdmissionOnly)
	require.Positive(t, rep.Baselines.AdmissionOnly.RequestsPerSecond)
	require.Positive(t, rep.Baselines.AdmissionOnly.AcceptedP50)
	require.Positive(t, rep.Baselines.AdmissionOnly.AcceptedP99)
	require.NotNil(t, rep.Baselines.AdmissionOnlyTraced, "--tracing: traced, all sampled")
	require.NotNil(t, rep.Baselines.AdmissionOnlySampled, "--tracing: traced, 1 % sampled")
	for _, k := range bench.RatioKeys {
		if k == "orders_vs_temporal_noop_cpu" || k == "items_vs_one_item" {
			// Shoppers paid while the orders were created: the server's
			// CPU per creation alone is not known; no sale of sizes
			// (--items).
			require.NotContains(t, rep.Ratios, k)
			continue
		}
		require.Positive(t, rep.Ratios[k], k)
	}
	// What an order costs in Temporal, from the histories of 2 orders of
	// each path per step (docs/temporal-actions.md).
	require.NotNil(t, rep.Temporal)
	require.Equal(t, map[string]float64{"paid": 6, "timeout": 5, "cancel": 6, "refunded": 9}, rep.Temporal.ActionsPerOrder)
	require.Equal(t, map[string]int{"paid": 4, "timeout": 4, "cancel": 4, "refunded": 4}, rep.Temporal.Sampled)
	for _, p := range []string{"paid", "timeout", "cancel"} {
		require.Positive(t, rep.Temporal.EventsPerOrder[p], p)
	}
	var out strings.Builder
	require.NoError(t, bench.WriteTable(&out, rep))
	require.Contains(t, out.String(), "admission_vs_fiber")
	require.Contains(t, out.String(), "accept_p99_vs_admission_only")
	require.Contains(t, out.String(), "invariants: ok")
	require.Contains(t, out.String(), "Temporal cost per order")
}

// --pay-after-creation: the payments wait for the last order to be
// created, then go out together and are measured on their own; the
// unpaid half still times out. Every time comes from the orders' rows.
func TestBenchPayAfterCreation(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 10 * time.Second})
	cfg := stackConfig(e)
	cfg.Users, cfg.PerUser, cfg.Concurrency, cfg.Stock = 40, 2, 8, 10
	cfg.PayRatio, cfg.PayAfterCreation, cfg.PayTimeout, cfg.TemporalAddr = 0.5, true, 10*time.Second, e.TemporalAddr
	rep := runBench(t, cfg)
	require.True(t, rep.Config.PayAfterCreation)
	s := rep.Steps[0]
	require.Equal(t, 10, s.Funnel.OrdersCreated)
	require.Equal(t, 5, s.Funnel.Paid)
	require.Equal(t, 5, s.Funnel.Closed)
	require.Positive(t, s.PaymentsPerSecond)
	require.NotNil(t, s.TemporalCPU)
	require.Positive(t, s.TemporalCPU.PayMs)
	require.Positive(t, s.TemporalCPU.CreateMs, "the creation ran alone")
	require.Positive(t, s.OrdersPerSecond)
	require.NotNil(t, s.Closing)
	require.Equal(t, 5, s.Closing.Orders)
	// The closes' lag is measured from the rows: a close comes after its
	// deadline, never before it.
	require.GreaterOrEqual(t, s.Closing.LagP50Seconds, 0.0)
}

// Open loop: arrivals on a clock (--rate), every winner paid.
func TestBenchOpenLoop(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	cfg := stackConfig(e)
	cfg.Users, cfg.PerUser, cfg.Rate, cfg.Stock, cfg.PayRatio = 60, 2, 300, 10, 1
	rep, err := bench.Run(context.Background(), cfg)
	require.NoError(t, err)
	require.True(t, rep.InvariantsOK, "%v", rep.Problems)
	s := rep.Steps[0]
	require.Equal(t, 300, s.Rate)
	require.Equal(t, 120, s.Funnel.Requests)
	require.Equal(t, 10, s.Funnel.Accepted)
	require.Equal(t, 10, s.Funnel.Paid)
	// 120 arrivals at 300/s take at least 0.4 s whatever the answers do.
	require.GreaterOrEqual(t, s.DurationSeconds, 0.39)
}

// --repeat 2 interleaves two rounds (baselines, then the step) and reports
// the medians and spreads of the three ratios; --redis-aof measures the
// admission script on a private redis-server per persistence setting. The
// invariants are checked in every round. No timing is asserted.
func TestBenchRepeat(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	cfg := stackConfig(e)
	cfg.Users, cfg.PerUser, cfg.Concurrency, cfg.Stock, cfg.PayRatio = 40, 2, 8, 10, 1
	cfg.Baselines = &bench.BaselineConfig{RedisAddr: e.RedisAddr, TemporalAddr: e.TemporalAddr,
		TemporalNamespace: "default", NoopWorkflows: 10, MySQLDSN: e.DSN, Exec: testenv.LabBinary(t)}
	cfg.Repeat, cfg.RedisAOF, cfg.Warmup, cfg.Keys, cfg.Risk = 2, bench.AOFModes, true, true, true
	cfg.Tracing = true
	rep := runBench(t, cfg)
	require.Len(t, rep.Steps, 2)
	require.Len(t, rep.Repeats, 2)
	for i, rd := range rep.Repeats {
		require.Equal(t, i+1, rd.N)
		require.Equal(t, i+1, rep.Steps[i].Repeat)
		require.True(t, rd.InvariantsOK)
		require.NotNil(t, rd.Baselines)
		require.NotNil(t, rd.Baselines.AdmissionOnly)
		require.Equal(t, 10, rep.Steps[i].Funnel.Paid)
		for _, m := range bench.AOFModes {
			require.Positive(t, rd.RedisAOF[m].PerSecond, m)
		}
	}
	for _, k := range bench.RatioKeys {
		if k == "closes_vs_temporal_noop" || k == "closes_vs_temporal_noop_cpu" || k == "orders_vs_temporal_noop_cpu" ||
			k == "items_vs_one_item" {
			// Every order is paid here, as it shows WAIT_PAY: no pay timer
			// fires, and no creation runs alone; no sale of sizes.
			require.NotContains(t, rep.Ratios, k)
			continue
		}
		require.Positive(t, rep.Ratios[k], k)
		require.Contains(t, rep.RatiosSpread, k)
		require.GreaterOrEqual(t, rep.RatiosSpread[k], 0.0, k)
	}
	for _, m := range bench.AOFModes {
		require.Equal(t, 2, rep.RedisAOF[m].Rounds, m)
		require.Positive(t, rep.RedisAOF[m].P99, m)
	}
	require.Equal(t, "off", rep.CPUPinning.Mode)
	var out strings.Builder
	require.NoError(t, bench.WriteTable(&out, rep))
	require.Contains(t, out.String(), "spread")
	require.Contains(t, out.String(), "appendfsync")
	require.Contains(t, out.String(), "cpu pinning: off")
	var html strings.Builder
	require.NoError(t, htmlreport.WriteHTML(&html, rep))
	require.Contains(t, html.String(), "Redis persistence")
}

// --registrations: a reserved sale. Shoppers register through the API in
// its window (after a pilot that sizes the window), then at its start
// the run's shoppers buy: the registrants among them win the stock, the
// others are refused NOT_ELIGIBLE, and what the registrations stored is
// counted in MySQL and Redis. No timing is asserted.
func TestBenchReservedSale(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	cfg := stackConfig(e)
	cfg.Users, cfg.PerUser, cfg.Concurrency, cfg.Stock, cfg.PayRatio = 40, 2, 8, 5, 1
	cfg.Registrations = 50
	cfg.Stores = &bench.Stores{MySQLDSN: e.DSN, RedisAddr: e.RedisAddr, RedisPrefix: e.Prefix}
	rep := runBench(t, cfg)
	rs := rep.Reserved
	require.NotNil(t, rs)
	require.Equal(t, 50, rs.Registered)
	require.Nil(t, rs.Refused)
	require.Equal(t, 50, rs.PilotRegistrations, "the window was sized by a pilot")
	require.Positive(t, rs.PerSecond)
	require.Positive(t, rs.P99Ms)
	require.Positive(t, rs.WindowSeconds)
	require.EqualValues(t, 50, rs.MySQLRows)
	require.EqualValues(t, 50, rs.RedisMembers)
	require.Positive(t, rs.RedisBytes)

	s := rs.Step
	require.Equal(t, "reserved", s.Sale)
	require.True(t, s.InvariantsOK)
	f := s.Funnel
	require.Equal(t, 80, f.Requests)
	require.Equal(t, 5, f.Accepted, "20 of the 40 shoppers registered: they buy the stock")
	require.Positive(t, f.NotEligible, "the others are refused before the sell-out")
	require.Equal(t, f.NotEligible, rs.NotEligible)
	require.Equal(t, f.Requests, f.Accepted+f.NotEligible+f.SoldOutMemory+f.SoldOutRedis+f.LimitExceeded+f.RateLimited+f.Window+f.OtherErrors)
	require.Zero(t, f.OtherErrors)
	require.Equal(t, 5, f.Paid)
	require.Positive(t, rs.RegistrationsVsBurst)
	require.Positive(t, rs.BurstVsFirstCome)

	var out strings.Builder
	require.NoError(t, bench.WriteTable(&out, rep))
	require.Contains(t, out.String(), "registrations_vs_burst")
	require.Contains(t, out.String(), "reserved c=8")
	var html strings.Builder
	require.NoError(t, htmlreport.WriteHTML(&html, rep))
	require.Contains(t, html.String(), "Reserved sale")
}

// --draw: a draw sale. The run's shoppers register through the API, the
// sale's workflow draws at its start, each shopper asks its registration
// once, the winners buy and one in ten of the others tries to: every
// winner buys, every try is refused, and Temporal holds one order
// workflow per unit. No timing is asserted.
func TestBenchDrawSale(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	cfg := stackConfig(e)
	cfg.Users, cfg.PerUser, cfg.Concurrency, cfg.Stock, cfg.PayRatio = 40, 2, 8, 5, 1
	cfg.Draw, cfg.TemporalAddr, cfg.TaskQueue = 6, e.TemporalAddr, e.TaskQueue
	rep := runBench(t, cfg)
	d := rep.Draw
	require.NotNil(t, d)
	require.Equal(t, 6, d.Units)
	require.Equal(t, 40, d.Registered)
	require.GreaterOrEqual(t, d.DrawSeconds, 0.0)
	require.Equal(t, map[string]int{"WON": 6, "WAITLISTED": 6, "LOST": 28}, d.Statuses)
	require.Equal(t, 4, d.Tries, "one in ten of the 34 others")
	require.Equal(t, 10, d.Purchases)
	require.Equal(t, 50, d.FrontDoorRequests, "40 registration reads, 10 purchases")
	require.EqualValues(t, 6, d.OrderWorkflows, "an order workflow per unit, none for the others")
	require.Positive(t, d.FrontDoorPerSecond)
	require.Positive(t, d.FrontDoorVsFirstCome)
	require.Equal(t, 80, d.FirstComeRequests)
	require.InDelta(t, 16.0, d.FirstComePurchasesPerUnit, 1e-9, "80 requests for 5 units")
	require.InDelta(t, 10.0/6, d.PurchasesPerUnit, 1e-9)

	s := d.Step
	require.Equal(t, "draw", s.Sale)
	require.Equal(t, 6, s.Latency["registration_won"].Count, "the registration reads, by answer")
	require.Equal(t, 28, s.Latency["registration_lost"].Count)
	require.True(t, s.InvariantsOK)
	f := s.Funnel
	require.Equal(t, 6, f.Accepted, "every winner buys")
	require.Equal(t, d.NotEligible, f.NotEligible)
	require.Equal(t, 4, f.NotEligible+f.SoldOutMemory+f.SoldOutRedis, "every try is refused")
	require.Zero(t, f.OtherErrors)
	require.Equal(t, 6, f.Paid)

	var out strings.Builder
	require.NoError(t, bench.WriteTable(&out, rep))
	require.Contains(t, out.String(), "front_door_vs_first_come")
	require.Contains(t, out.String(), "draw c=8")
	var html strings.Builder
	require.NoError(t, htmlreport.WriteHTML(&html, rep))
	require.Contains(t, html.String(), "Draw sale")
}

// runRefundRelay runs the refund relay a stack's worker runs, for the
// orders the bench refunds.
func runRefundRelay(t *testing.T, e *testenv.Env) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go (&relay.Refunds{Store: e.DB, Starter: e.Orders, Log: e.Log}).Run(ctx, 200*time.Millisecond)
}

// A sale of sizes (--items 3) in the round, after its one-item step: the
// stock split over the items, the burst naming them in turn, every unit
// sold once, each item's invariants held, and its burst read against the
// one-item step's, the round's ratio. No timing is asserted.
func TestBenchItemsSale(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	cfg := stackConfig(e)
	cfg.Users, cfg.PerUser, cfg.Concurrency, cfg.Stock, cfg.PayRatio = 40, 2, 8, 7, 1
	cfg.Items = 3
	rep := runBench(t, cfg)
	s := rep.Items
	require.NotNil(t, s)
	require.Equal(t, 3, s.Items)
	require.True(t, s.Step.InvariantsOK, "%v", rep.Problems)
	require.Equal(t, "items", s.Step.Sale)
	require.Equal(t, 7, s.Step.Funnel.Accepted, "every unit of every size sold once")
	require.Zero(t, s.Step.Funnel.OtherErrors)
	require.Positive(t, s.VsOneItem)
	require.Equal(t, s.VsOneItem, rep.Ratios["items_vs_one_item"], "one round: its ratio is the median")
	r := e.RequireInvariants(s.SessionID)
	require.Len(t, r.Items, 3)
	for _, it := range r.Items {
		require.Zero(t, it.RedisStock, "size %d sold out", it.SKUID)
	}
	require.Equal(t, []int{3, 2, 2}, []int{r.Items[0].TotalStock, r.Items[1].TotalStock, r.Items[2].TotalStock})
	var out strings.Builder
	require.NoError(t, bench.WriteTable(&out, rep))
	require.Contains(t, out.String(), "items_vs_one_item")
}
