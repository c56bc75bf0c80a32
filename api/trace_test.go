package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/clientip"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/spantest"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/temporal/starter"
)

const (
	incomingTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingSpan  = "00f067aa0ba902b7"
)

// An incoming traceparent is continued from a trusted proxy only; from
// anyone else the request starts its own trace, linked to the incoming
// one. Tracing off, the ids are the same as on.
func TestTraceparentContinuedOnlyFromTrustedProxies(t *testing.T) {
	testenv.SkipShort(t, "MariaDB and Redis")
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, Temporal: true})
	sess := e.Session(5, 1, 100)
	get := func(srv *api.Server) string {
		req := httptest.NewRequest("GET", fmt.Sprintf("/api/v1/sessions/%d", sess.ID), nil)
		req.Header.Set("traceparent", "00-"+incomingTrace+"-"+incomingSpan+"-01")
		resp, err := srv.App().Test(req, 5000)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return resp.Header.Get("X-Request-ID")
	}
	build := func(trusted string) *api.Server {
		prefixes, err := clientip.ParseProxies(trusted)
		require.NoError(t, err)
		srv, err := app.NewAPI(app.APIConfig{AdminToken: testenv.AdminToken, Config: api.Config{JWTSecret: testenv.JWTSecret, WebhookSecret: testenv.WebhookSecret,
			Logger: e.Log, ProxyHeader: "X-Forwarded-For", TrustedProxies: prefixes}},
			starter.Config{}, e.DB, e.Gate, e.Orders)
		require.NoError(t, err)
		return srv.Server
	}
	// App().Test's peer is 0.0.0.0.
	untrusted, trusted := build("10.0.0.0/8"), build("0.0.0.0/32")

	off := get(untrusted)
	require.Regexp(t, "^[0-9a-f]{32}$", off)
	require.NotEqual(t, incomingTrace, off, "tracing off, an untrusted peer's trace is not continued either")
	require.Equal(t, incomingTrace, get(trusted), "tracing off, a trusted proxy's trace id still names the request")

	rec := spantest.Record(t)
	id := get(untrusted)
	require.NotEqual(t, incomingTrace, id)
	spans := rec.Ended()
	require.Len(t, spans, 1)
	s := spans[0]
	require.Equal(t, id, s.SpanContext().TraceID().String())
	require.False(t, s.Parent().IsValid(), "a new trace")
	require.Len(t, s.Links(), 1)
	require.Equal(t, incomingTrace, s.Links()[0].SpanContext.TraceID().String())
	require.Equal(t, trace.SpanKindServer, s.SpanKind())
	require.Equal(t, "GET /api/v1/sessions/:id", s.Name())

	require.Equal(t, incomingTrace, get(trusted))
	spans = rec.Ended()
	require.Len(t, spans, 2)
	s = spans[1]
	require.Equal(t, incomingTrace, s.SpanContext().TraceID().String())
	require.Equal(t, incomingSpan, s.Parent().SpanID().String())
	require.Empty(t, s.Links())
}

// The purchase's span says which session, shopper and order, and what
// admission decided; its trace id is the answer's X-Request-ID.
func TestPurchaseSpan(t *testing.T) {
	testenv.SkipShort(t, "MariaDB and Redis")
	rec := spantest.Record(t)
	e := testenv.New(t, testenv.Options{NoWorker: true})
	sess := e.Session(1, 1, 100)

	r := e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(7), nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	refused := e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(8), nil)
	require.Equal(t, http.StatusConflict, refused.Status, "%s", refused.Raw)

	attrs := func(traceID string) map[string]string {
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID().String() == traceID && s.SpanKind() == trace.SpanKindServer {
				require.Equal(t, "POST /api/v1/sessions/:id/orders", s.Name())
				m := map[string]string{}
				for _, a := range s.Attributes() {
					m[string(a.Key)] = a.Value.Emit()
				}
				return m
			}
		}
		t.Fatalf("no server span of trace %s", traceID)
		return nil
	}
	won := attrs(r.Header.Get("X-Request-ID"))
	require.Equal(t, fmt.Sprint(sess.ID), won["seckill.session_id"])
	require.Equal(t, "redis", won["seckill.admission.layer"])
	require.Equal(t, "7", won["user.id"])
	require.Equal(t, r.Str("order_no"), won["seckill.order_no"])
	require.Equal(t, "ACCEPTED", won["seckill.admission.verdict"])
	require.Equal(t, "202", won["http.response.status_code"])

	lost := attrs(refused.Header.Get("X-Request-ID"))
	require.Equal(t, "SOLD_OUT", lost["seckill.admission.verdict"])
	require.Equal(t, "409", lost["http.response.status_code"])
	require.Empty(t, lost["seckill.order_no"])
}
