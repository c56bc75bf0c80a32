package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/api"
	seckillapp "github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/mysql"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/risk"
	"github.com/seckill/seckill/temporal/starter"
)

// The admission-only API's sales: the measured one, one it sells first
// to warm up, and with --keys the other measured ones (pairOrder).
const (
	measuredSession = 1
	warmupSession   = 2
)

// pairOrder are the sales of the keyed and unkeyed bursts (--keys), in
// the order they are sold: keyed, unkeyed, unkeyed, keyed (unkeyed first
// in even rounds), so that a drift from one burst to the next in the
// same process weighs on both alike. In one run with one burst of each,
// whichever went second was about half as fast in all three rounds.
var pairOrder = []struct {
	session int64
	keyed   bool
}{{measuredSession, true}, {3, false}, {4, false}, {5, true}}

// admissionOnlyBaseline sends the burst of a step at level (same shoppers,
// requests and load loop) to the admission-only API: the real handler code
// on the stack's MySQL and Redis with the order tier switched off, in a
// process of its own (admissionOnlyAPI). The same burst first sells a
// sale of its own, unmeasured: the stack's API has served bursts before
// (the warm-up step, the rounds before), a fresh process has not, and its
// winners' latency swung several-fold from round to round. With --keys
// the burst is keyed, and the same burst without keys runs beside it
// (AdmissionOnly.Unkeyed): two of each, in pairOrder.
func admissionOnlyBaseline(ctx context.Context, cfg Config, shoppers []shopper, level, round int, riskURL string, tr *Tracing) (*AdmissionOnly, error) {
	b := cfg.Baselines
	srv, err := startBaselineServer(ctx, b.Exec, cfg.Pin.frontPrefix(), ServerSpec{Kind: ServerAdmissionOnly,
		JWTSecret: cfg.JWTSecret, WebhookSecret: cfg.WebhookSecret, AdminToken: cfg.AdminToken, Limits: b.Limits,
		RedisAddr: b.RedisAddr, MySQLDSN: b.MySQLDSN, Stock: cfg.Stock, PerUserLimit: cfg.Limit, RiskURL: riskURL, Tracing: tr})
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	r := &stepRunner{cfg: cfg, c: newLoadClient("http://" + srv.addr), shoppers: shoppers, rep: &Report{},
		step: &Step{SessionID: warmupSession, Latency: map[string]Percentiles{}, InvariantsOK: true}}
	if cfg.Rate > 0 {
		r.step.Rate = level
	} else {
		r.step.Concurrency = level
	}
	n := cfg.Users * cfg.PerUser
	if _, _, err := r.burst(ctx, level, "admission-only warm-up", cfg.Keys, n); err != nil {
		return nil, err
	}
	m := newBurstMeter(srv.cmd.Process.Pid, b.RedisAddr)
	var keyed, plain bursts
	for i := range pairOrder {
		p := pairOrder[i]
		if round%2 == 0 { // U K K U
			p.keyed = !p.keyed
		}
		if !cfg.Keys && p.keyed {
			continue
		}
		name, into := "admission-only burst, no keys", &plain
		if p.keyed {
			name, into = "admission-only burst, keyed", &keyed
		}
		r.step.SessionID = p.session
		m.start()
		rs, dur, err := r.burst(ctx, level, name, p.keyed, n)
		if err != nil {
			return nil, err
		}
		into.add(rs, dur)
		into.cpu.add(m.stop())
		if !cfg.Keys && len(plain.runs) == 1 {
			break
		}
	}
	if !cfg.Keys {
		return plain.admissionOnly()
	}
	k, err := keyed.admissionOnly()
	if err != nil {
		return nil, err
	}
	if k.Unkeyed, err = plain.admissionOnly(); err != nil {
		return nil, err
	}
	return k, nil
}

// bursts are the measured bursts of one kind, added up.
type bursts struct {
	runs    [][]result
	durs    []time.Duration
	results []result
	dur     time.Duration
	cpu     cpuSpent
}

func (b *bursts) add(rs []result, dur time.Duration) {
	b.runs, b.durs = append(b.runs, rs), append(b.durs, dur)
	b.results = append(b.results, rs...)
	b.dur += dur
}

// admissionOnly is the bursts' figures: requests/s over their time, the
// percentiles over all their answers, the losers over each one's time
// from its sell-out on.
func (b *bursts) admissionOnly() (*AdmissionOnly, error) {
	p := percentiles(b.results, OutAccepted)
	if p.Count == 0 {
		return nil, fmt.Errorf("admission-only: no request of %d was accepted (%v)", len(b.results), outcomeCounts(b.results))
	}
	a := &AdmissionOnly{RequestsPerSecond: float64(len(b.results)) / b.dur.Seconds(), AcceptedP50: p.P50, AcceptedP99: p.P99,
		RefusedP50: refusals(b.results).P50}
	var after []result
	var span time.Duration
	for i, rs := range b.runs {
		if l, soldOut := lost(rs); soldOut > 0 && b.durs[i] > soldOut {
			after, span = append(after, l...), span+b.durs[i]-soldOut
		}
	}
	if len(after) > 0 {
		a.Losers = losers(after, span)
	}
	a.CPU = b.cpu.perRequest(len(b.results))
	return a, nil
}

// admissionOnlyAPI builds the real API (api.New) on the stack's MySQL and
// Redis whose Flow starts nothing: the order tier switched off. Its sessions
// (measuredSession and warmupSession) live only in this process and on a
// scratch Redis prefix, so the stack's shoppers never see them; cleanup
// deletes the prefix (stock, reservations and the pending-start entries the
// no-op starts leave).
func admissionOnlyAPI(ctx context.Context, spec ServerSpec) (app *fiber.App, cleanup func(), err error) {
	var undo []func()
	cleanup = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	db, err := mysql.Open(ctx, spec.MySQLDSN)
	if err != nil {
		return nil, nil, err
	}
	undo = append(undo, func() { db.Close() })
	rdb := redis.NewAdmissionClient(redis.Server{Addrs: redis.ParseAddrs(spec.RedisAddr)}) // the stack API's settings
	undo = append(undo, func() { rdb.Close() })
	if spec.Tracing != nil {
		stop, err := spec.Tracing.start(ctx, db, rdb)
		if err != nil {
			return nil, nil, err
		}
		undo = append(undo, stop)
	}
	prefix := "bench-admission-" + strconv.Itoa(rand.IntN(1<<30))
	undo = append(undo, func() { _ = redis.DeletePrefix(context.Background(), rdb, prefix) })
	gate := redis.New(rdb, prefix)
	if err := gate.Load(ctx); err != nil {
		return nil, nil, err
	}
	if err := fillPool(ctx, rdb, redis.AdmissionPoolSize); err != nil {
		return nil, nil, err
	}
	now := time.Now().UTC()
	sessions := map[int64]*seckill.Session{}
	for _, id := range []int64{warmupSession, measuredSession, 3, 4, 5} {
		sess := &seckill.Session{ID: id, SKUID: 7000, Title: "bench admission-only", PriceCents: priceCents,
			TotalStock: spec.Stock, PerUserLimit: spec.PerUserLimit, StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour)}
		if _, err := gate.Preheat(ctx, sess.ID, sess.TotalStock); err != nil {
			return nil, nil, err
		}
		sessions[id] = sess
	}
	var rc admission.RiskConfig
	if spec.RiskURL != "" {
		rc.Checker = &risk.Client{URL: spec.RiskURL, HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	}
	srv, err := seckillapp.NewAPI(seckillapp.APIConfig{AdminToken: spec.AdminToken, Config: api.Config{JWTSecret: spec.JWTSecret, WebhookSecret: spec.WebhookSecret,
		// One log line per winner would cost the baseline what the stack's
		// WARN level spares the real API.
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Limits: spec.Limits, Limiter: redis.NewLimiter(rdb, prefix), Risk: rc},
		starter.Config{}, scratchStore{APIStore: db, sessions: sessions}, gate, noStarts{})
	if err != nil {
		return nil, nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	srv.Start(sctx)
	undo = append(undo, func() {
		stop()
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(dctx)
	})
	return srv.App(), cleanup, nil
}

// allowAll is a risk service that allows every shopper (seckill-lab bench
// --risk): what is measured is what asking one costs the burst.
func allowAll() (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"allow":true}`))
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/risk", func() { _ = srv.Close() }, nil
}

// fillPool opens n connections of a Redis client before the baseline
// serves: the stack's API has served sales before and keeps its pool full,
// a baseline started cold dialled most of its connections during the
// burst, and its winners' latency measured the dials rather than the
// handler.
func fillPool(ctx context.Context, rdb goredis.UniversalClient, n int) error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- rdb.Ping(ctx).Err()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return fmt.Errorf("admission-only baseline: fill the Redis pool: %w", err)
		}
	}
	return nil
}

// outcomeCounts counts results by outcome, to say why a burst failed.
func outcomeCounts(rs []result) map[string]int {
	n := map[string]int{}
	for _, x := range rs {
		n[x.outcome]++
	}
	return n
}

// scratchStore is the stack's MySQL but for the baseline's sessions, which
// it serves from memory: a row would show in the stack's session list and
// its reconcile, and MySQL has no way to delete a session. The API reads a
// session once per cache period either way, so admission costs the same.
type scratchStore struct {
	seckillapp.APIStore
	sessions map[int64]*seckill.Session
}

func (s scratchStore) Session(ctx context.Context, id int64) (*seckill.Session, int, error) {
	sess, ok := s.sessions[id]
	if !ok {
		return nil, 0, seckill.Errorf(seckill.ENOTFOUND, "session %d not found", id)
	}
	cp := *sess
	return &cp, cp.TotalStock, nil
}

func (s scratchStore) OpenSessions(context.Context, time.Time, int) ([]*seckill.Session, error) {
	out := make([]*seckill.Session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		out = append(out, sess)
	}
	return out, nil
}

// noStarts is the Flow of the admission-only API: every start "succeeds"
// at once, so the starter clears the pending-start entry as it does after
// a real start (the same Redis call), and nothing reaches Temporal. The
// other calls are never made by a burst.
type noStarts struct{}

func (noStarts) Start(context.Context, *seckill.OrderRequest) (bool, error) { return true, nil }
func (noStarts) Pay(context.Context, *seckill.Payment) error                { return errNoOrderTier }
func (noStarts) PayWithStart(context.Context, *seckill.OrderRequest, *seckill.Payment) error {
	return errNoOrderTier
}
func (noStarts) Cancel(context.Context, string, string) error { return errNoOrderTier }
func (noStarts) StartSession(context.Context, int64) (bool, error) {
	return false, errNoOrderTier
}
func (noStarts) SessionChanged(context.Context, int64) error { return errNoOrderTier }
func (noStarts) Ping(context.Context) error                  { return nil }

var errNoOrderTier = seckill.Errorf(seckill.EUNAVAILABLE, "the admission-only baseline has no order tier")
