package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dchest/captcha"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill"
)

// The sold-out fast path next to a bare Fiber handler answering the same
// JSON, in the same run: the ratio is what matters on a shared machine.
//
//	go test ./api/ -run '^$' -bench 'SoldOut|BareFiber' -benchmem

// benchStore serves one session; the sold-out path needs nothing else.
type benchStore struct {
	Store
	s *seckill.Session
}

func (b benchStore) Session(context.Context, int64) (*seckill.Session, int, error) {
	return b.s, 0, nil
}

func runHandler(b *testing.B, h fasthttp.RequestHandler, auth string) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.Header.SetMethod("POST")
			ctx.Request.SetRequestURI("/api/v1/sessions/1/orders")
			ctx.Request.Header.Set("Authorization", auth)
			ctx.Request.SetBodyString(`{"quantity":1}`)
			h(&ctx)
			if ctx.Response.StatusCode() != fiber.StatusConflict {
				b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	})
}

func BenchmarkSoldOutFastPath(b *testing.B) {
	secret := []byte("bench-secret")
	now := time.Now()
	sess := &seckill.Session{ID: 1, SKUID: 1, Title: "b", PriceCents: 1, TotalStock: 1, PerUserLimit: 1,
		StartAt: now.Add(-time.Hour), EndAt: now.Add(time.Hour)}
	srv, err := New(Config{JWTSecret: secret, WebhookSecret: secret, AdminToken: "a",
		Limits: Limits{Global: 0}, SessionCacheTTL: time.Hour}, benchStore{s: sess}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv.soldOut.mark(1)
	tok, _ := IssueToken(secret, 7, time.Hour, now)
	runHandler(b, srv.App().Handler(), "Bearer "+tok)
}

func BenchmarkBareFiber(b *testing.B) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Post("/api/v1/sessions/:id/orders", func(c *fiber.Ctx) error {
		return c.Status(fiber.StatusConflict).JSON(ErrorBody{Code: seckill.ESOLDOUT, Message: "sold out",
			TraceID: fmt.Sprintf("%016x", time.Now().UnixNano())})
	})
	runHandler(b, app.Handler(), "Bearer x")
}

// What a captcha costs the API: drawing one image (the audio is drawn only
// when asked for), next to the sold-out answer above in the same run.
//
//	go test ./api/ -run '^$' -bench 'CaptchaImage|SoldOut' -benchmem
func BenchmarkCaptchaImage(b *testing.B) {
	for b.Loop() {
		if _, err := captchaImage("0123456789abcdef0123456789abcdef", captcha.RandomDigits(captchaDigits)); err != nil {
			b.Fatal(err)
		}
	}
}
