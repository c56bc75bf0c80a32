package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
)

// refund asks for a refund of an order as alice, an operator; what she
// says about herself (X-Seckill-Actor) is not what the audit records.
func refund(e *testenv.Env, no, key string, body any) *testenv.Response {
	headers := []string{"X-Seckill-Actor", "mallory"}
	if key != "" {
		headers = append(headers, "Idempotency-Key", key)
	}
	return e.Do("POST", "/admin/v1/orders/"+no+"/refund", e.OperatorToken("alice", seckill.RoleOperator), body, headers...)
}

// payAtCheckout pays an order at the sandbox's checkout page and waits
// for it to be PAID.
func payAtCheckout(t *testing.T, e *testenv.Env, tok, no string) string {
	t.Helper()
	co := e.Do("POST", "/api/v1/orders/"+no+"/payment", tok, nil)
	require.Equal(t, http.StatusCreated, co.Status, "%s", co.Raw)
	code, page := checkoutPage(t, "POST", co.Str("checkout_url"), "pay")
	require.Equal(t, http.StatusOK, code, page)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
	return co.Str("payment_id")
}

// An operator refunds a paid order of a sold-out sale: the order goes
// REFUND_PENDING at once with its unit back on sale (another shopper buys
// it), then REFUNDED through the provider, one refund; the refund is in
// the session's audit ledger; retries answer it, a second refund is
// refused, and the key cannot be reused for anything else.
func TestOperatorRefundsAPaidOrder(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(1, 1, 900)
	tok := e.Token(1)
	no := buyWaitPay(t, e, sess.ID, tok)
	payment := payAtCheckout(t, e, tok, no)
	testenv.RequireError(t, e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), e.Token(2), nil), 409, "SOLD_OUT", "")

	reason := map[string]string{"reason": "customer cancelled by phone"}
	testenv.RequireError(t, e.Do("POST", "/admin/v1/orders/"+no+"/refund", "", reason, "Idempotency-Key", "k"), 401, "UNAUTHENTICATED", "")
	testenv.RequireError(t, refund(e, no, "", reason), 400, "INVALID_ARGUMENT", "Idempotency-Key")
	testenv.RequireError(t, refund(e, no, "k0", map[string]any{}), 400, "INVALID_ARGUMENT", "reason")
	testenv.RequireError(t, refund(e, no, "k0", map[string]any{"reason": "  "}), 400, "INVALID_ARGUMENT", "reason")
	testenv.RequireError(t, refund(e, no, "k0", map[string]any{"reason": 7}), 400, "INVALID_ARGUMENT", "")
	testenv.RequireError(t, refund(e, no, "k0", `{"reason":`), 400, "INVALID_ARGUMENT", "")
	testenv.RequireError(t, refund(e, fmt.Sprint(sess.ID)+"-nope", "k0", reason), 404, "NOT_FOUND", "not found")
	require.Equal(t, "PAID", e.Do("GET", "/api/v1/orders/"+no, tok, nil).Str("status"), "refused calls change nothing")

	r := refund(e, no, "k1", reason)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	require.Equal(t, "REFUND_PENDING", r.Str("status"))
	require.Equal(t, true, r.Body["applied"])
	again := refund(e, no, "k1", reason)
	require.Equal(t, http.StatusAccepted, again.Status, "%s", again.Raw)
	require.Equal(t, false, again.Body["applied"], "a retry is the same refund")
	testenv.RequireError(t, refund(e, no, "k2", reason), 409, "CONFLICT", "refunded once")
	testenv.RequireError(t, refund(e, no, "k1", map[string]string{"reason": "another"}), 422, "IDEMPOTENCY_MISMATCH", "")
	testenv.RequireError(t, e.Do("POST", fmt.Sprintf("/admin/v1/sessions/%d/pause", sess.ID), testenv.AdminToken, nil,
		"Idempotency-Key", "k1"), 422, "IDEMPOTENCY_MISMATCH", "refund")

	// The unit is back on sale, at once.
	other := buyWaitPay(t, e, sess.ID, e.Token(2))

	refunds := &relay.Refunds{Store: e.DB, Starter: e.Orders, Log: e.Log}
	e.Eventually(20*time.Second, "the refund started", func() error {
		if n, err := refunds.Pass(context.Background()); err != nil || n != 1 {
			return fmt.Errorf("refunds started: %d, %v", n, err)
		}
		return nil
	})
	e.WaitStatus(tok, no, 30*time.Second, seckill.StatusRefunded)
	made := e.Provider.Refunds()
	require.Len(t, made, 1)
	require.Equal(t, seckill.Refund{PaymentID: payment, OrderNo: no, AmountCents: 900, Currency: "usd", TraceID: made[payment].TraceID}, made[payment],
		"the whole payment, in the currency the sandbox took")
	testenv.RequireError(t, refund(e, no, "k3", reason), 409, "CONFLICT", "REFUNDED")

	audit, err := e.Client().SessionAudit(context.Background(), sess.ID)
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, seckill.ActionRefund, audit[0].Action)
	require.Equal(t, no, audit[0].OrderNo)
	require.Equal(t, "customer cancelled by phone", audit[0].Reason)
	require.Equal(t, "alice", audit[0].Actor, "the audit names who authenticated, not what a header says")
	require.Equal(t, seckill.RoleOperator, audit[0].ActorRole)

	require.Equal(t, "WAIT_PAY", e.Do("GET", "/api/v1/orders/"+other, e.Token(2), nil).Str("status"))
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusRefunded])
	require.Equal(t, 1, rep.Orders[seckill.StatusWaitPay])
	require.Zero(t, rep.DBStock)
}

// Operators racing to refund one order: under one key every call answers
// the one refund; under different keys exactly one refunds and the others
// are refused. Never two refunds, never the unit back twice.
func TestConcurrentRefundsOfOneOrder(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(2, 1, 500)
	nos := []string{}
	for u := int64(1); u <= 2; u++ {
		tok := e.Token(u)
		no := buyWaitPay(t, e, sess.ID, tok)
		payAtCheckout(t, e, tok, no)
		nos = append(nos, no)
	}
	reason := map[string]string{"reason": "duplicate shipment"}
	race := func(no string, key func(i int) string) (accepted, applied, conflict int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				r := refund(e, no, key(i), reason)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.Status == http.StatusAccepted:
					accepted++
					if r.Body["applied"] == true {
						applied++
					}
				case r.Status == http.StatusConflict:
					conflict++
				default:
					t.Errorf("unexpected answer %d %s", r.Status, r.Raw)
				}
			})
		}
		wg.Wait()
		return
	}
	acc, app, _ := race(nos[0], func(int) string { return "same-key" })
	require.Equal(t, 8, acc)
	require.Equal(t, 1, app, "one key, one refund")
	acc, app, conf := race(nos[1], func(i int) string { return fmt.Sprintf("key-%d", i) })
	require.Equal(t, 1, acc)
	require.Equal(t, 1, app)
	require.Equal(t, 7, conf)

	refunds := &relay.Refunds{Store: e.DB, Starter: e.Orders, Log: e.Log}
	e.Eventually(30*time.Second, "both refunded", func() error {
		if _, err := refunds.Pass(context.Background()); err != nil {
			return err
		}
		for i, no := range nos {
			o, err := e.DB.Order(context.Background(), no)
			if err != nil || o.Status != seckill.StatusRefunded {
				return fmt.Errorf("order %d: %v %v", i, o, err)
			}
		}
		return nil
	})
	require.Len(t, e.Provider.Refunds(), 2)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 2, rep.DBStock, "each unit back once")
	require.Equal(t, 2, rep.RedisStock)
}
