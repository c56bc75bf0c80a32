package api_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/sandbox"
)

// buyWaitPay buys one unit as user and waits for the order's row.
func buyWaitPay(t *testing.T, e *testenv.Env, sessionID int64, tok string) string {
	t.Helper()
	r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sessionID), tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	no := r.Str("order_no")
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusWaitPay)
	return no
}

// payLosingTheWebhook opens the order's checkout and pays at its page
// with the webhook lost: only asking the provider finds the payment.
func payLosingTheWebhook(t *testing.T, e *testenv.Env, tok, no string) *testenv.Response {
	t.Helper()
	co := e.Do("POST", "/api/v1/orders/"+no+"/payment", tok, nil)
	require.Equal(t, http.StatusCreated, co.Status, "%s", co.Raw)
	code, page := checkoutPage(t, "POST", co.Str("checkout_url"), "lose")
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, "lost")
	return co
}

func checkoutPage(t *testing.T, method, checkoutURL, action string) (int, string) {
	t.Helper()
	var body io.Reader
	if action != "" {
		body = strings.NewReader(url.Values{"action": {action}}.Encode())
	}
	req, err := http.NewRequest(method, checkoutURL, body)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

// The checkout opens one payment per order at the provider (the sandbox
// here), the same on every call, payable until the order's deadline; its
// page pays through the real signed webhook, and a paid order can no
// longer be checked out.
func TestCheckoutOpensOnePaymentAndItsPagePays(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(3, 1, 1250)
	tok := e.Token(9)
	testenv.RequireError(t, e.Do("POST", "/api/v1/orders/1-abc/payment", "", nil), 401, "UNAUTHENTICATED", "")
	no := buyWaitPay(t, e, sess.ID, tok)

	testenv.RequireError(t, e.Do("POST", "/api/v1/orders/"+no+"/payment", e.Token(10), nil), 404, "NOT_FOUND", "not found")
	testenv.RequireError(t, e.Do("POST", "/api/v1/orders/"+fmt.Sprint(sess.ID)+"-nope/payment", tok, nil), 404, "NOT_FOUND", "")
	r := e.Do("POST", "/api/v1/orders/"+no+"/payment", tok, nil)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	require.Equal(t, "sandbox", r.Str("provider"))
	id, link := r.Str("payment_id"), r.Str("checkout_url")
	require.True(t, strings.HasPrefix(id, "sbx_"), id)
	require.Equal(t, e.BaseURL+sandbox.CheckoutPath+id, link)
	order := e.Do("GET", "/api/v1/orders/"+no, tok, nil)
	deadline, err := time.Parse(time.RFC3339Nano, order.Str("pay_deadline"))
	require.NoError(t, err)
	expires, err := time.Parse(time.RFC3339Nano, r.Str("expires_at"))
	require.NoError(t, err)
	require.False(t, expires.After(deadline), "expires_at %s after the deadline %s", expires, deadline)

	again := e.Do("POST", "/api/v1/orders/"+no+"/payment", tok, nil)
	require.Equal(t, http.StatusCreated, again.Status, "%s", again.Raw)
	require.Equal(t, id, again.Str("payment_id"), "a second checkout is the same payment")

	code, page := checkoutPage(t, "GET", link, "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "12.50")
	require.Contains(t, page, no)
	code, _ = checkoutPage(t, "POST", link, "steal")
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = checkoutPage(t, "GET", e.BaseURL+sandbox.CheckoutPath+"sbx_unknown", "")
	require.Equal(t, http.StatusNotFound, code)

	code, page = checkoutPage(t, "POST", link, "pay")
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, "Paid")
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
	testenv.RequireError(t, e.Do("POST", "/api/v1/orders/"+no+"/payment", tok, nil), 409, "CONFLICT", "PAID")
	// Paying again at the page is the provider's replay of its webhook.
	code, _ = checkoutPage(t, "POST", link, "pay")
	require.Equal(t, http.StatusOK, code)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
	require.Empty(t, e.Provider.Refunds())
}

// A QUEUED order (its workflow not started: no start, no relay) can be
// checked out and paid: the webhook starts the workflow with the payment.
func TestCheckoutOfAQueuedOrder(t *testing.T) {
	e := testenv.New(t, testenv.Options{WrapFlow: testenv.LoseStarts})
	sess := e.Session(1, 1, 700)
	tok := e.Token(5)
	r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	no := r.Str("order_no")
	require.Equal(t, "QUEUED", e.Do("GET", "/api/v1/orders/"+no, tok, nil).Str("status"))
	co := e.Do("POST", "/api/v1/orders/"+no+"/payment", tok, nil)
	require.Equal(t, http.StatusCreated, co.Status, "%s", co.Raw)
	code, page := checkoutPage(t, "POST", co.Str("checkout_url"), "pay")
	require.Equal(t, http.StatusOK, code, page)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
	e.RequireInvariants(sess.ID)
}

// A payment whose webhook never came is found at the deadline: the close
// asks the provider first, and the order is PAID, not closed and refunded.
func TestLostWebhookIsPaidAtTheDeadline(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 4 * time.Second})
	sess := e.Session(2, 1, 300)
	tok := e.Token(3)
	no := buyWaitPay(t, e, sess.ID, tok)
	co := payLosingTheWebhook(t, e, tok, no)
	require.Equal(t, "WAIT_PAY", e.Do("GET", "/api/v1/orders/"+no, tok, nil).Str("status"), "no webhook, no payment yet")

	require.Equal(t, seckill.StatusPaid, e.WaitStatus(tok, no, 30*time.Second, seckill.StatusPaid, seckill.StatusClosed))
	// The webhook, arriving late after all, is a replay.
	require.Equal(t, http.StatusOK, e.Pay(no, co.Str("payment_id"), "evt_late", 300).Status)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
	require.Empty(t, e.Provider.Refunds(), "paid in time: nothing to refund")
}

// An order that timed out with an open checkout is cancelled at the
// provider before it closes: the page can no longer pay it.
func TestTimedOutCheckoutIsCancelled(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 3 * time.Second})
	sess := e.Session(1, 1, 300)
	tok := e.Token(4)
	no := buyWaitPay(t, e, sess.ID, tok)
	co := e.Do("POST", "/api/v1/orders/"+no+"/payment", tok, nil)
	require.Equal(t, http.StatusCreated, co.Status, "%s", co.Raw)
	require.Equal(t, seckill.StatusClosed, e.WaitStatus(tok, no, 30*time.Second, seckill.StatusClosed, seckill.StatusPaid))
	p, err := e.Provider.Payment(context.Background(), co.Str("payment_id"))
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentCanceled, p.State)
	code, page := checkoutPage(t, "POST", co.Str("checkout_url"), "pay")
	require.Equal(t, http.StatusConflict, code, page)
	testenv.RequireError(t, e.Do("POST", "/api/v1/orders/"+no+"/payment", tok, nil), 409, "CONFLICT", "CLOSED")
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusClosed])
}

// payDuringCancel is a provider whose payment goes through while seckill
// cancels it: the shopper paid (the webhook is still on its way) in the
// instant the cancel was sent.
type payDuringCancel struct {
	*sandbox.Provider
}

func (p payDuringCancel) CancelPayment(ctx context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	if _, err := p.Complete(ctx, ref.PaymentID, true); err != nil {
		return seckill.ProviderPayment{}, err
	}
	return p.Provider.CancelPayment(ctx, ref)
}

// The shopper cancels while their payment goes through: the provider
// refuses the cancel (paid), and the order is PAID with that payment.
func TestPaymentSucceedingDuringTheCancel(t *testing.T) {
	e := testenv.New(t, testenv.Options{WrapPayments: func(p *sandbox.Provider) seckill.PaymentProvider { return payDuringCancel{p} }})
	sess := e.Session(1, 1, 450)
	tok := e.Token(6)
	no := buyWaitPay(t, e, sess.ID, tok)
	co := e.Do("POST", "/api/v1/orders/"+no+"/payment", tok, nil)
	require.Equal(t, http.StatusCreated, co.Status, "%s", co.Raw)
	r := e.Do("POST", "/api/v1/orders/"+no+"/cancel", tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	require.Equal(t, seckill.StatusPaid, e.WaitStatus(tok, no, 30*time.Second, seckill.StatusPaid, seckill.StatusClosed))
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
	require.Empty(t, e.Provider.Refunds())
}

// downProvider cannot be reached while down is set.
type downProvider struct {
	*sandbox.Provider
	down  *atomic.Bool
	asked *atomic.Int32
}

var errDown = errors.New("provider: connection refused")

func (p downProvider) QueryPayment(ctx context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	p.asked.Add(1)
	if p.down.Load() {
		return seckill.ProviderPayment{}, errDown
	}
	return p.Provider.QueryPayment(ctx, ref)
}

// A provider that is down at the deadline keeps the order open (it is
// not closed on a guess) and is asked again until it answers: paid with
// a lost webhook → PAID once it is back.
func TestProviderDownAtTheDeadlineKeepsTheOrderOpen(t *testing.T) {
	var down atomic.Bool
	var asked atomic.Int32
	down.Store(true)
	e := testenv.New(t, testenv.Options{PayTimeout: 3 * time.Second,
		WrapPayments: func(p *sandbox.Provider) seckill.PaymentProvider { return downProvider{p, &down, &asked} }})
	sess := e.Session(1, 1, 300)
	tok := e.Token(7)
	no := buyWaitPay(t, e, sess.ID, tok)
	payLosingTheWebhook(t, e, tok, no)

	e.Eventually(30*time.Second, "the provider asked again after the deadline", func() error {
		if n := asked.Load(); n < 3 {
			return fmt.Errorf("asked %d times", n)
		}
		return nil
	})
	require.Equal(t, "WAIT_PAY", e.Do("GET", "/api/v1/orders/"+no, tok, nil).Str("status"), "kept open while the provider is down")
	down.Store(false)
	require.Equal(t, seckill.StatusPaid, e.WaitStatus(tok, no, 60*time.Second, seckill.StatusPaid, seckill.StatusClosed))
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
	require.Empty(t, e.Provider.Refunds())
}

// Past the pay grace a provider that stays down no longer holds the order:
// it closes and gives its stock back, and the payment that did go through
// takes the refund path when its webhook finally comes.
func TestProviderDownPastTheGraceCloses(t *testing.T) {
	var down atomic.Bool
	var asked atomic.Int32
	down.Store(true)
	e := testenv.New(t, testenv.Options{PayTimeout: 3 * time.Second, PayGrace: 2 * time.Second,
		WrapPayments: func(p *sandbox.Provider) seckill.PaymentProvider { return downProvider{p, &down, &asked} }})
	sess := e.Session(1, 1, 300)
	tok := e.Token(8)
	no := buyWaitPay(t, e, sess.ID, tok)
	co := payLosingTheWebhook(t, e, tok, no)

	require.Equal(t, seckill.StatusClosed, e.WaitStatus(tok, no, 60*time.Second, seckill.StatusClosed, seckill.StatusPaid))
	require.GreaterOrEqual(t, asked.Load(), int32(1))
	// The webhook comes at last: a late payment, refunded once.
	require.Equal(t, http.StatusOK, e.Pay(no, co.Str("payment_id"), "evt_late", 300).Status)
	e.WaitStatus(tok, no, 30*time.Second, seckill.StatusRefundPending)
	refunds := &relay.Refunds{Store: e.DB, Starter: e.Orders, Log: e.Log}
	e.Eventually(20*time.Second, "the refund started", func() error {
		if n, err := refunds.Pass(context.Background()); err != nil || n != 1 {
			return fmt.Errorf("refunds started: %d, %v", n, err)
		}
		return nil
	})
	e.WaitStatus(tok, no, 30*time.Second, seckill.StatusRefunded)
	e.Eventually(10*time.Second, "one refund", func() error {
		if n := len(e.Provider.Refunds()); n != 1 {
			return fmt.Errorf("%d refunds", n)
		}
		return nil
	})
	e.RequireInvariants(sess.ID)
}
