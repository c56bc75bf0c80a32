package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/mysql"
	"github.com/seckill/seckill/redis"
)

// admissionOnlyBaseline sends the burst of a step at level (same shoppers,
// requests and load loop) to an API built here with api.New, the real
// handler code on the stack's MySQL and Redis, whose Flow starts nothing:
// the order tier switched off. Its session lives only in this process and
// on a scratch Redis prefix, so the stack's shoppers never see it and
// nothing of it is left behind: the prefix (stock, reservations and the
// pending-start entries the no-op starts leave) is deleted afterwards.
func admissionOnlyBaseline(ctx context.Context, cfg Config, shoppers []shopper, level int) (*AdmissionOnly, error) {
	b := cfg.Baselines
	db, err := mysql.Open(ctx, b.MySQLDSN)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rdb := redis.NewAdmissionClient(redis.Server{Addrs: redis.ParseAddrs(b.RedisAddr)}) // the stack API's settings
	defer rdb.Close()
	prefix := "bench-admission-" + strconv.Itoa(rand.IntN(1<<30))
	defer func() { _ = redis.DeletePrefix(context.Background(), rdb, prefix) }()
	gate := redis.New(rdb, prefix)
	if err := gate.Load(ctx); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	sess := &seckill.Session{ID: 1, SKUID: 7000, Title: "bench admission-only", PriceCents: priceCents,
		TotalStock: cfg.Stock, PerUserLimit: cfg.Limit, StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour)}
	if _, err := gate.Preheat(ctx, sess.ID, sess.TotalStock); err != nil {
		return nil, err
	}
	srv, err := api.New(api.Config{JWTSecret: cfg.JWTSecret, WebhookSecret: cfg.WebhookSecret, AdminToken: cfg.AdminToken,
		Limits: b.Limits, Limiter: redis.NewLimiter(rdb, prefix),
		// One log line per winner would cost the baseline what the stack's
		// WARN level spares the real API.
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		scratchStore{Store: db, sess: sess}, gate, noStarts{})
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	srv.Start(sctx)
	app := srv.App()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = app.Listener(ln) }()
	defer func() {
		_ = app.Shutdown()
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(dctx)
	}()

	r := &stepRunner{cfg: cfg, c: newLoadClient("http://" + ln.Addr().String()), shoppers: shoppers, rep: &Report{},
		step: &Step{SessionID: sess.ID, Latency: map[string]Percentiles{}, InvariantsOK: true}}
	if cfg.Rate > 0 {
		r.step.Rate = level
	} else {
		r.step.Concurrency = level
	}
	results, dur := r.burst(ctx, level, "admission-only burst")
	p := percentiles(results, OutAccepted)
	if p.Count == 0 {
		return nil, fmt.Errorf("admission-only: no request of %d was accepted (%v)", len(results), outcomeCounts(results))
	}
	return &AdmissionOnly{RequestsPerSecond: float64(len(results)) / dur.Seconds(), AcceptedP50: p.P50, AcceptedP99: p.P99}, nil
}

// outcomeCounts counts results by outcome, to say why a burst failed.
func outcomeCounts(rs []result) map[string]int {
	n := map[string]int{}
	for _, x := range rs {
		n[x.outcome]++
	}
	return n
}

// scratchStore is the stack's MySQL but for the baseline's session, which
// it serves from memory: a row would show in the stack's session list and
// its reconcile, and MySQL has no way to delete a session. The API reads a
// session once per cache period either way, so admission costs the same.
type scratchStore struct {
	api.Store
	sess *seckill.Session
}

func (s scratchStore) Session(ctx context.Context, id int64) (*seckill.Session, int, error) {
	if id != s.sess.ID {
		return nil, 0, seckill.Errorf(seckill.ENOTFOUND, "session %d not found", id)
	}
	cp := *s.sess
	return &cp, cp.TotalStock, nil
}

func (s scratchStore) OpenSessions(context.Context, time.Time, int) ([]*seckill.Session, error) {
	return []*seckill.Session{s.sess}, nil
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
