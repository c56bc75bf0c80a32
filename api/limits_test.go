package api_test

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// handlerNames are the method names of a route's handlers, in order
// ("globalLimit", "shopper", "createOrder").
func handlerNames(r fiber.Route) []string {
	out := make([]string, 0, len(r.Handlers))
	for _, h := range r.Handlers {
		name := runtime.FuncForPC(reflect.ValueOf(h).Pointer()).Name()
		name = strings.TrimSuffix(name[strings.LastIndex(name, ".")+1:], "-fm")
		out = append(out, name)
	}
	return out
}

// No route a shopper can call in a loop goes without limits: every route
// behind the shopper's token has a process-wide limit (the global limit,
// or the per-IP read limit), and every one that costs Redis, MySQL, the
// payment provider or CPU per call the per-user and per-IP limits too,
// before its work. A route added without them fails here.
func TestEveryShopperRouteIsLimited(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, Dev: true})
	// The handlers that apply the per-user and per-IP limits themselves,
	// after refusals that cost nothing (a sold-out session, a malformed
	// body), so that those stay as cheap as an unlimited answer.
	limitsInside := map[string]bool{"createOrder": true, "issueTicket": true, "newCaptcha": true, "register": true}
	// Reads without a per-user limit, and why.
	cheapReads := map[string]string{
		"getOrder": "the poll: one Redis read, limited per IP; a per-user limit would starve the shopper's own buy",
	}
	shopperRoutes := 0
	for _, r := range e.API.App().GetRoutes(true) {
		if r.Method == fiber.MethodHead {
			continue
		}
		names := handlerNames(r)
		auth := -1
		for i, n := range names {
			if n == "authorize" && strings.HasPrefix(r.Path, "/api/v1/") {
				auth = i
			}
		}
		if auth < 0 {
			continue
		}
		shopperRoutes++
		final := names[len(names)-1]
		require.Truef(t, slices.Contains(names[:auth], "globalLimit") || slices.Contains(names[:auth], "readLimit"),
			"%s %s (%v): no process-wide limit before the token check", r.Method, r.Path, names)
		if limitsInside[final] {
			continue
		}
		if why, ok := cheapReads[final]; ok && r.Method == fiber.MethodGet {
			t.Logf("%s %s: read limit only (%s)", r.Method, r.Path, why)
			continue
		}
		require.Truef(t, slices.Contains(names[auth:], "shopperLimits"),
			"%s %s (%v): a shopper can call it in a loop without the per-user and per-IP limits", r.Method, r.Path, names)
	}
	require.Equal(t, 10, shopperRoutes, "the walk found the shopper routes")
}

// A shopper cancelling random order numbers in a loop (each one a Redis
// read and a MySQL query) is held to the per-user limit like a buyer, and
// so is one fetching captcha audio or the order list, or registering for a
// reserved sale (the limit admission applies): 429 with a Retry-After,
// nothing looked up.
func TestShopperLoopsAreLimited(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, Limits: app.Limits{User: 2}})
	sess := e.Session(1, 1, 100)
	start := time.Now().Add(time.Hour)
	reserved, err := e.Client().CreateSession(context.Background(), &seckill.Session{SKUID: 1, Title: "t", PriceCents: 100, TotalStock: 1,
		PerUserLimit: 1, StartAt: start, EndAt: start.Add(time.Hour), Mode: seckill.ModeReserved})
	require.NoError(t, err)
	tok := e.Token(77)
	for _, call := range []struct{ method, path string }{
		{"POST", fmt.Sprintf("/api/v1/orders/%d-nope%%d/cancel", sess.ID)},
		{"GET", "/api/v1/captchas/nope%d/audio"},
		{"GET", "/api/v1/orders?limit=%d"},
		{"POST", fmt.Sprintf("/api/v1/sessions/%d/registrations?n=%%d", reserved.ID)},
	} {
		limited := 0
		for i := 1; i <= 20; i++ {
			r := e.Do(call.method, fmt.Sprintf(call.path, i), tok, nil)
			if r.Status == 429 {
				limited++
				require.Equal(t, "RATE_LIMITED", r.Str("code"), "%s", r.Raw)
				require.NotEmpty(t, r.Header.Get("Retry-After"))
			}
		}
		// 20 calls, the user's bucket holding 2 a second (shared by the
		// routes): however slow the machine, most are refused.
		require.Positive(t, limited, "%s %s: never limited", call.method, call.path)
	}
}
