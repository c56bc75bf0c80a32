package api

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	dchest "github.com/dchest/captcha"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/captcha"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/sessions"
)

// The sold-out fast path next to a bare Fiber handler answering the same
// JSON, in the same run: the ratio is what matters on a shared machine.
//
//	go test ./api/ -run '^$' -bench 'SoldOut|BareFiber' -benchmem

// runHandler sends the same order request to h in a loop; key, when set,
// makes each request's Idempotency-Key (a fresh one per request, as the
// shop sends them).
func runHandler(b *testing.B, h fasthttp.RequestHandler, auth string, key func() string) {
	runHandlerOn(b, h, "/api/v1/sessions/1/orders", fiber.StatusConflict, func() string { return auth }, key)
}

// runHandlerOn is runHandler on path, each request's Authorization made by
// auth, each answer's status want.
func runHandlerOn(b *testing.B, h fasthttp.RequestHandler, path string, want int, auth, key func() string) {
	b.ReportAllocs()
	b.ResetTimer() // the set-up (a sale sold out, its winner) is not measured
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			// As fasthttp's server does between requests: the user values
			// hold the request's context (Fiber's UserContext).
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.ResetUserValues()
			ctx.Request.Header.SetMethod("POST")
			ctx.Request.SetRequestURI(path)
			ctx.Request.Header.Set("Authorization", auth())
			if key != nil {
				ctx.Request.Header.Set(HeaderIdempotencyKey, key())
			}
			ctx.Request.SetBodyString(`{"quantity":1}`)
			h(&ctx)
			if ctx.Response.StatusCode() != want {
				b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	})
}

// noStarts takes no workflow start: a sold-out sale admits nobody.
type noStarts struct{}

func (noStarts) Offer(*seckill.OrderRequest) bool { return false }

// soldOutServer is an API whose one session this process saw sell out,
// and a shopper's bearer token.
func soldOutServer(b *testing.B) (*Server, string) {
	secret := []byte("bench-secret")
	now := time.Now()
	sess := &seckill.Session{ID: 1, SKUID: 1, Title: "b", PriceCents: 1, TotalStock: 1, PerUserLimit: 1,
		StartAt: now.Add(-time.Hour), EndAt: now.Add(time.Hour)}
	// The sold-out path needs the session and nothing else.
	cache := sessions.NewCache(time.Hour, func(context.Context, int64) (*seckill.Session, error) { return sess, nil })
	adm := admission.New(admission.Config{Sessions: cache, Starts: noStarts{}})
	srv, err := New(Config{JWTSecret: secret, WebhookSecret: secret, Operators: &auth.Operators{Bootstrap: "a"}, Shoppers: &auth.Shoppers{Secrets: [][]byte{secret}}}, Services{Admission: adm, Sessions: cache})
	if err != nil {
		b.Fatal(err)
	}
	adm.SoldOut.Mark(1)
	tok, _ := auth.IssueToken(secret, 7, time.Hour, now)
	return srv, "Bearer " + tok
}

func BenchmarkSoldOutFastPath(b *testing.B) {
	srv, auth := soldOutServer(b)
	runHandler(b, srv.App().Handler(), auth, nil)
}

// The same with a fresh UUIDv7 key on every request, the session sold out
// a while ago (the watcher's mark: stock read at zero just now, last keyed
// win a minute ago): answered from memory too. The keys are made before
// the clock starts.
func BenchmarkSoldOutFastPathKeyed(b *testing.B) {
	srv, auth := soldOutServer(b)
	now := time.Now()
	srv.svc.Admission.SoldOut.Confirm(1, seckill.StockMark{Clock: now.Add(time.Hour), LastKeyedWin: now.Add(-time.Minute)})
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = uuid.Must(uuid.NewV7()).String()
	}
	var next atomic.Uint32
	runHandler(b, srv.App().Handler(), auth, func() string { return keys[next.Add(1)%uint32(len(keys))] })
}

// A keyed loser in a sale's first second after its sell-out: its key is
// stamped within the clock skew of the last keyed win, so it may have
// won, and its shopper's first click (a token the API has not checked
// yet). The shopper its JWT names is read, and the sale's holders (read
// once from the real Redis, in the background; until then the token is
// checked and the pin looked up) say it holds nothing. What the key costs
// a loser next to BenchmarkSoldOutFastPath (answered from memory before
// the JWT), in the same run:
//
//	go test ./api/ -run '^$' -bench 'SoldOut|BareFiber' -benchmem -cpuprofile cpu.out
func BenchmarkSoldOutKeyedFirstSecond(b *testing.B) {
	now := time.Now()
	sess := &seckill.Session{ID: 1, SKUID: 1, Title: "b", PriceCents: 1, TotalStock: 1, PerUserLimit: 1,
		StartAt: now.Add(-time.Hour), EndAt: now.Add(time.Hour)}
	srv, gate, _ := gateServer(b, sess, noStarts{}, 0)
	svc, ctx, secret := srv.svc.Admission, context.Background(), []byte(benchSecret)
	a := &seckill.Attempt{Session: sess, UserID: 1, Quantity: 1, OrderNo: seckill.NewOrderNo(sess.ID), TraceID: "w",
		Now: now, IdempotencyKey: uuid.Must(uuid.NewV7()).String(), Fingerprint: "1"}
	a.KeyTime, _ = admission.KeyTime(a.IdempotencyKey)
	adm, err := gate.AdmitAttempt(ctx, a)
	if err != nil || adm.SoldOut == nil {
		b.Fatalf("the winner: %v, %+v", err, adm)
	}
	svc.SoldOut.Mark(sess.ID)
	svc.SoldOut.Confirm(sess.ID, *adm.SoldOut)
	keys := make([]string, 1<<14)
	for i := range keys {
		u := uuid.Must(uuid.NewV7())
		binary.BigEndian.PutUint64(u[:8], uint64(adm.SoldOut.LastKeyedWin.UnixMilli())<<16|uint64(u[6])<<8|uint64(u[7]))
		keys[i] = u.String()
	}
	// Each shopper's first click: a token the API has not checked yet
	// (more of them than it remembers), as a burst's losers send them.
	toks := make([]string, 1<<16)
	for i := range toks {
		tok, _ := auth.IssueToken(secret, int64(i+100), time.Hour, now)
		toks[i] = "Bearer " + tok
	}
	var next, nextTok atomic.Uint32
	// Many in flight, as in a burst: a lookup waits for a round trip.
	b.SetParallelism(64)
	runHandlerOn(b, srv.App().Handler(), fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), fiber.StatusConflict,
		func() string { return toks[nextTok.Add(1)%uint32(len(toks))] },
		func() string { return keys[next.Add(1)%uint32(len(keys))] })
}

// benchSecret signs the benchmarks' tokens.
const benchSecret = "bench-secret"

// gateServer is an API deciding on a gate over the real Redis (a prefix of
// its own, removed at the end), its session sess preheated with
// sess.TotalStock units and its starts given to starts; userRPS (0: off)
// is its per-user rate limit, kept by the Redis limiter it returns.
func gateServer(b *testing.B, sess *seckill.Session, starts admission.Starts, userRPS int) (*Server, *redis.Gate, *redis.Limiter) {
	addr := os.Getenv("SECKILL_TEST_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb := redis.NewClient(&goredis.UniversalOptions{Addrs: redis.ParseAddrs(addr), PoolSize: 64})
	prefix := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	b.Cleanup(func() {
		_ = redis.DeletePrefix(context.Background(), rdb, prefix)
		rdb.Close()
	})
	gate, limiter := redis.New(rdb, prefix), redis.NewLimiter(rdb, prefix)
	ctx := context.Background()
	if err := gate.Load(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := gate.Preheat(ctx, sess.ID, sess.TotalStock); err != nil {
		b.Fatal(err)
	}
	cache := sessions.NewCache(time.Hour, func(context.Context, int64) (*seckill.Session, error) { return sess, nil })
	// Its winners' log lines formatted as the API's are, and dropped.
	adm := admission.New(admission.Config{Sessions: cache, Stock: gate, Starts: starts,
		Limits: admission.Limits{Limiter: limiter, User: userRPS}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	secret := []byte(benchSecret)
	srv, err := New(Config{JWTSecret: secret, WebhookSecret: secret, Operators: &auth.Operators{Bootstrap: "a"}, Shoppers: &auth.Shoppers{Secrets: [][]byte{secret}}},
		Services{Admission: adm, Sessions: cache})
	if err != nil {
		b.Fatal(err)
	}
	return srv, gate, limiter
}

// takenStarts takes every start and forgets it: the winners' orders are
// not what is measured.
type takenStarts struct{}

func (takenStarts) Offer(*seckill.OrderRequest) bool { return true }

// Winners through the whole handler (the shopper's JWT, the body, the
// per-user rate limit, the coalesced script, the 202), 65,536 shoppers
// buying in turn: without the limit, with the limiter's calls
// coalesced into pipelines, and one round trip per call, interleaved in
// one run, many requests in flight as in a burst:
//
//	go test ./api/ -run '^$' -bench WinnersLimited -benchtime 3s
func BenchmarkWinnersLimited(b *testing.B) {
	now := time.Now()
	toks := make([]string, 1<<16)
	for i := range toks {
		tok, _ := auth.IssueToken([]byte(benchSecret), int64(i+1), time.Hour, now)
		toks[i] = "Bearer " + tok
	}
	for _, mode := range []string{"no-limit", "coalesced", "one-call-each", "no-limit", "one-call-each", "coalesced"} {
		b.Run(mode, func(b *testing.B) {
			// Every shopper may buy a unit in each of the run's rounds.
			sess := &seckill.Session{ID: 1, SKUID: 1, Title: "b", PriceCents: 1, TotalStock: 100_000_000, PerUserLimit: 1000,
				StartAt: now.Add(-time.Hour), EndAt: now.Add(time.Hour)}
			userRPS := 5
			if mode == "no-limit" {
				userRPS = 0
			}
			srv, gate, limiter := gateServer(b, sess, takenStarts{}, userRPS)
			limiter.Coalesce = mode == "coalesced"
			var next atomic.Uint32
			b.SetParallelism(64)
			runHandlerOn(b, srv.App().Handler(), "/api/v1/sessions/1/orders", fiber.StatusAccepted,
				func() string { return toks[next.Add(1)%uint32(len(toks))] }, nil)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "winners/s")
			b.StopTimer()
			// Each 202 holds one unit, and no unit is lost or doubled.
			snap, err := gate.SessionSnapshot(context.Background(), sess.ID)
			if err != nil || len(snap.Reservations) != b.N || snap.Stock+b.N != sess.TotalStock || snap.MarkMismatches != 0 {
				b.Fatalf("%d winners, Redis holds %d reservations and %d units left of %d, %d mark mismatches (%v)",
					b.N, len(snap.Reservations), snap.Stock, sess.TotalStock, snap.MarkMismatches, err)
			}
		})
	}
}

func BenchmarkBareFiber(b *testing.B) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Post("/api/v1/sessions/:id/orders", func(c *fiber.Ctx) error {
		return c.Status(fiber.StatusConflict).JSON(ErrorBody{Code: seckill.ESOLDOUT, Message: "sold out",
			TraceID: fmt.Sprintf("%016x", time.Now().UnixNano())})
	})
	runHandler(b, app.Handler(), "Bearer x", nil)
}

// What a captcha costs the API: drawing one image (the audio is drawn only
// when asked for), next to the sold-out answer above in the same run.
//
//	go test ./api/ -run '^$' -bench 'CaptchaImage|SoldOut' -benchmem
func BenchmarkCaptchaImage(b *testing.B) {
	for b.Loop() {
		if _, err := captcha.Image("0123456789abcdef0123456789abcdef", dchest.RandomDigits(captcha.Length)); err != nil {
			b.Fatal(err)
		}
	}
}
