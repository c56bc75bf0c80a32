package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/risk"
	"github.com/seckill/seckill/signature"
)

// riskService is the shop's risk service as a test serves it: it refuses
// the users in deny, answers after delay, and keeps what it was asked.
type riskService struct {
	mu    sync.Mutex
	deny  map[int64]string
	delay time.Duration
	asked []seckill.RiskQuery
	sigs  []string
}

func (r *riskService) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var q seckill.RiskQuery
	if err := json.NewDecoder(req.Body).Decode(&q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.asked = append(r.asked, q)
	r.sigs = append(r.sigs, req.Header.Get(signature.Header))
	reason, denied := r.deny[q.UserID]
	delay := r.delay
	r.mu.Unlock()
	time.Sleep(delay)
	_ = json.NewEncoder(w).Encode(seckill.RiskVerdict{Allow: !denied, Reason: reason})
}

func (r *riskService) queries() []seckill.RiskQuery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seckill.RiskQuery(nil), r.asked...)
}

func riskEnv(t *testing.T, svc *riskService, fail string, limits app.Limits) *testenv.Env {
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	return testenv.New(t, testenv.Options{Limits: limits, Configure: func(c *app.Config) {
		c.RiskURL, c.RiskSecret, c.RiskFail = srv.URL, "risk-secret", fail
		c.RiskTimeout = 200 * time.Millisecond
		c.RiskUserAgentDeny = "curl, -"
	}})
}

// The risk check before admission: a User-Agent rule and the shop's risk
// service refuse with 403 and the reason, touching no stock; the service
// is asked once per shopper and session (signed, with the shopper's IP,
// User-Agent and device), its verdict cached; every refusal and the
// answers that go on leave the invariants whole.
func TestRiskCheckBeforeAdmission(t *testing.T) {
	svc := &riskService{deny: map[int64]string{2: "too many accounts on this card"}}
	e := riskEnv(t, svc, "open", app.Limits{})
	sess := e.Session(5, 1, 100)
	buy := func(user int64, headers ...string) *testenv.Response {
		return e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(user), map[string]int{"quantity": 1}, headers...)
	}

	r := buy(3, "User-Agent", "curl/8.5.0")
	testenv.RequireError(t, r, 403, seckill.EFORBIDDEN, "User-Agent")
	require.Equal(t, admission.LayerRisk, r.Header.Get(api.HeaderLayer))
	require.Empty(t, svc.queries(), "a User-Agent rule refuses before the service is asked")

	dev := e.Do("GET", "/api/v1/device", "", nil)
	require.Equal(t, http.StatusOK, dev.Status, "%s", dev.Raw)
	cookie := dev.Header.Get("Set-Cookie")
	require.Contains(t, cookie, admission.DeviceCookie+"=")
	require.Contains(t, cookie, "HttpOnly")
	pair := strings.SplitN(cookie, ";", 2)[0]

	for range 2 {
		r = buy(2, "User-Agent", "shop/1", "Cookie", pair)
		testenv.RequireError(t, r, 403, seckill.EFORBIDDEN, "too many accounts on this card")
		require.Equal(t, admission.LayerRisk, r.Header.Get(api.HeaderLayer))
	}
	r = buy(1, "User-Agent", "shop/1", "Cookie", pair)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	e.WaitStatus(e.Token(1), r.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)

	q := svc.queries()
	require.Len(t, q, 2, "one question per shopper: the second refusal came from the cache")
	require.Equal(t, seckill.RiskQuery{SessionID: sess.ID, UserID: 2, IP: "127.0.0.1", UserAgent: "shop/1", DeviceID: dev.Str("device_id")}, q[0])
	for _, sig := range svc.sigs {
		require.Contains(t, sig, "v1=", "signed with SECKILL_RISK_SECRET")
	}

	forged := admission.DeviceCookie + "=" + strings.Repeat("a", 32) + ".bm90LW91cnM"
	testenv.RequireError(t, buy(4, "User-Agent", "shop/1", "Cookie", forged), 400, seckill.EINVALID, admission.DeviceCookie)
	again := e.Do("GET", "/api/v1/device", "", nil, "Cookie", pair)
	require.Equal(t, dev.Str("device_id"), again.Str("device_id"), "a valid cookie keeps its id")

	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 4, rep.RedisStock, "one unit sold: the refusals touched nothing")
}

// A risk service that misses its deadline: fail open lets the purchase go
// on, fail closed answers 503 (retry) and sells nothing.
func TestRiskCheckWithoutAnAnswer(t *testing.T) {
	for _, fail := range []string{"open", "closed"} {
		t.Run(fail, func(t *testing.T) {
			svc := &riskService{delay: time.Second}
			e := riskEnv(t, svc, fail, app.Limits{})
			sess := e.Session(5, 1, 100)
			r := e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(1), nil, "User-Agent", "shop/1")
			if fail == "open" {
				require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
				e.WaitStatus(e.Token(1), r.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)
			} else {
				testenv.RequireError(t, r, 503, seckill.EUNAVAILABLE, "risk check")
				require.Equal(t, "1", r.Header.Get("Retry-After"))
			}
			e.RequireInvariants(sess.ID)
		})
	}
}

// The device limit: one device (the shop page's cookie) buying for many
// accounts is held to SECKILL_LIMIT_DEVICE_RPS, whichever account it
// uses.
func TestDeviceLimit(t *testing.T) {
	e := riskEnv(t, &riskService{}, "open", app.Limits{Device: 1})
	sess := e.Session(5, 1, 100)
	pair := strings.SplitN(e.Do("GET", "/api/v1/device", "", nil).Header.Get("Set-Cookie"), ";", 2)[0]
	buy := func(user int64) *testenv.Response {
		return e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(user), nil, "User-Agent", "shop/1", "Cookie", pair)
	}
	won := buy(1)
	require.Equal(t, http.StatusAccepted, won.Status, "%s", won.Raw)
	r := buy(2)
	testenv.RequireError(t, r, 429, seckill.ERATELIMITED, "Retry-After")
	require.Equal(t, admission.LayerRateLimit, r.Header.Get(api.HeaderLayer))
	e.WaitStatus(e.Token(1), won.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 4, rep.RedisStock)
}

// A risk service that missed its deadline for a shopper is not asked
// again for that shopper for a moment (RiskConfig.NoAnswerHold, long
// here): the shopper's retries are decided as no answer at once, by
// SECKILL_RISK_FAIL (open: on; closed: 503), and counted as no_answer;
// another shopper is asked.
func TestRiskCheckRemembersNoAnswer(t *testing.T) {
	for _, closed := range []bool{false, true} {
		t.Run(map[bool]string{false: "open", true: "closed"}[closed], func(t *testing.T) {
			svc := &riskService{delay: 2 * time.Second}
			risky := httptest.NewServer(svc)
			t.Cleanup(risky.Close)
			e := testenv.New(t, testenv.Options{NoAPI: true})
			m := metrics.New()
			srv := newServer(t, e, app.APIConfig{Config: api.Config{Metrics: m}, Risk: admission.RiskConfig{Checker: &risk.Client{URL: risky.URL},
				Timeout: 100 * time.Millisecond, FailClosed: closed, NoAnswerHold: time.Hour}}, e.DB)
			srv.Start(t.Context())
			serve(t, e, srv)
			sess := e.Session(5, 2, 100)
			buy := func(user int64) *testenv.Response {
				return e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(user), nil, "User-Agent", "shop/1")
			}
			var orders []string
			for _, user := range []int64{1, 1, 2} {
				r := buy(user)
				if closed {
					testenv.RequireError(t, r, 503, seckill.EUNAVAILABLE, "risk check")
					require.Equal(t, admission.LayerRisk, r.Header.Get(api.HeaderLayer))
					require.NotEmpty(t, r.Header.Get("Retry-After"))
					continue
				}
				require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
				orders = append(orders, r.Str("order_no"))
			}
			asked := map[int64]int{}
			for _, q := range svc.queries() {
				asked[q.UserID]++
			}
			require.Equal(t, map[int64]int{1: 1, 2: 1}, asked, "shopper 1's retry was not asked again")
			require.Equal(t, 3.0, testutil.ToFloat64(m.RiskChecks.WithLabelValues("no_answer")))
			for i, no := range orders {
				e.WaitStatus(e.Token([]int64{1, 1, 2}[i]), no, 20*time.Second, seckill.StatusWaitPay)
			}
			e.RequireInvariants(sess.ID)
		})
	}
}
