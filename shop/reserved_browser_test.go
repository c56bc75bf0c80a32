package shop_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// Reserved sales (预约) on the shop page: the shopper registers in the
// window (after the captcha when the sale asks for one) and, at the start,
// a registrant buys without a ticket while a shopper who did not register
// is told the sale is for registrants only. Each test waits for a real
// start a few seconds ahead, so the two run in parallel.

// reservedLead is how far ahead a test's registration closes: time enough
// for Chromium to start and the shopper to register, on a slow machine too.
const reservedLead = 12 * time.Second

// reservedSale creates a reserved sale as an admin does, through the API:
// registration from now until registerUntil, the sale from start for an
// hour, two units, one per shopper (extra adds fields). The Env's worker
// runs the sale's life, which preheats it.
func reservedSale(t *testing.T, e *testenv.Env, registerUntil, start time.Time, extra map[string]any) int64 {
	t.Helper()
	body := map[string]any{"sku_id": 8, "title": "Launch day", "price_cents": 2500, "stock": 2, "per_user_limit": 1,
		"start_at": start.Format(time.RFC3339), "end_at": start.Add(time.Hour).Format(time.RFC3339),
		"mode": "reserved", "register_until": registerUntil.Format(time.RFC3339)}
	maps.Copy(body, extra)
	r := e.Do("POST", "/admin/v1/sessions", e.OperatorToken("ana", seckill.RoleAdmin), body)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return int64(r.Body["id"].(float64))
}

// failFetch makes the page's requests to URLs ending in suffix fail, as a
// network error between the page and the API does.
func (p *page) failFetch(suffix string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(function(){
		var f = window.fetch;
		window.fetch = function (url) {
			if (String(url).endsWith(%q)) return Promise.reject(new TypeError("the test cut this request"));
			return f.apply(this, arguments);
		};
		return true;
	})()`, suffix)))
	require.NoError(p.t, err)
}

// A reserved sale whose registration is open until its start: a shopper
// registers by clicking and sees "Registered" with the countdown to the
// start; at the start the registrant buys and the order appears; a shopper
// who did not register sees the sale is for registrants only and cannot
// buy (the API says NOT_ELIGIBLE); a page that could not ask the shopper's
// registration offers Buy, and shows the API's NOT_ELIGIBLE. A sale whose
// registration opens later counts down to it.
func TestBrowserReservedSale(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{})
	start := time.Now().Add(reservedLead).Truncate(time.Second)
	id := reservedSale(t, e, start, start, nil)
	c := card(id)
	status := c + ` [data-role="register-status"]`
	// And one whose registration opens in an hour.
	later := time.Now().Add(time.Hour).Truncate(time.Second)
	soon := card(reservedSale(t, e, later.Add(time.Hour), later.Add(time.Hour),
		map[string]any{"register_from": later.Format(time.RFC3339)}))

	p := openShop(t, e, "/")
	p.do(
		wait(c+`[data-state="UPCOMING"][data-registration="OPEN"]`),
		wait(c+` button[data-role="register"]`),
		wait(c+` button[data-role="buy"]:disabled`),
		wait(soon+`[data-registration="SOON"]`),
	)
	require.Regexp(t, `^Registration opens in (59:\d\d|1:00:0[01])\.$`, p.text(soon+` [data-role="register-status"]`))
	require.False(t, p.visible(soon+` button[data-role="register"]`), "not open yet")
	require.Contains(t, p.text(status), "Registration is open")
	require.Contains(t, p.text(c+` [data-role="registration"]`), "–", "the window is shown")
	p.pasteToken(21)
	p.do(
		click(c+` button[data-role="register"]`),
		wait(status+`[data-reg="REGISTERED"]`),
		chromedp.WaitNotVisible(chromedp.CSS(c+` button[data-role="register"]`)),
	)
	require.Contains(t, p.text(status), "Registered")
	require.Regexp(t, `^starts in \d+:\d\d$`, p.text(c+` [data-role="countdown"]`))
	require.Equal(t, "REGISTERED", e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d/registration", id), e.Token(21), nil).Str("status"))

	// Another shopper, who does not register: the page asked, and knows.
	q := openShop(t, e, fmt.Sprintf("/?session=%d", id))
	q.pasteToken(22)
	q.do(wait(status + `[data-reg="NONE"]`))

	// The start: the registrant buys, with no ticket or captcha.
	p.do(
		wait(c+`[data-state="ACTIVE"][data-registration="ON_SALE"]`),
		click(c+` button[data-role="buy"]`),
		wait(`#order[data-status="WAIT_PAY"]`),
	)
	no := p.attr("#order", "data-order-no")
	p.do(wait(fmt.Sprintf(`#my-orders-list li[data-order-no=%q]`, no)))
	require.Contains(t, p.text(status), "you may buy")

	// The shopper who did not register cannot.
	q.do(
		wait(c+`[data-state="ACTIVE"][data-registration="ON_SALE"]`),
		wait(c+` button[data-role="buy"]:disabled`),
	)
	require.Equal(t, "Registrants only", q.text(c+` button[data-role="buy"]`))
	require.Contains(t, q.text(status), "registered shoppers only")
	require.False(t, q.visible(c+` button[data-role="register"]`), "registration is closed")
	testenv.RequireError(t, e.BuyWithKey(id, 22, "", 1), http.StatusForbidden, "NOT_ELIGIBLE", "")

	// A page that cannot ask (the lookup fails) lets the shopper try; the
	// API's answer is shown, and the page learns from it.
	q.failFetch("/registration")
	q.pasteToken(23)
	q.do(
		click(c+` button[data-role="buy"]`),
		wait(`#message[data-code="NOT_ELIGIBLE"]`),
		wait(status+`[data-reg="NONE"]`),
		wait(c+` button[data-role="buy"]:disabled`),
	)
	require.Contains(t, q.text("#message-text"), "registered shoppers only")
	require.NotEmpty(t, q.text("#message-trace-id"))

	waitOrder(e, 21, no, seckill.StatusWaitPay)
	rep := e.RequireInvariants(id)
	require.Equal(t, 1, rep.Orders[seckill.StatusWaitPay])
	require.Equal(t, 1, rep.RedisStock, "the shoppers who did not register moved nothing")
}

// A reserved sale that requires a captcha: the captcha is solved at
// registration; after the registration closed the registrant counts down
// to the start while a shopper who did not register reads "Registration
// closed"; at the start the registrant buys with no captcha and no ticket
// (the sale's tickets are issued only in its registration window: a
// purchase that asked for one would fail).
func TestBrowserReservedCaptcha(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	until := time.Now().Add(reservedLead).Truncate(time.Second)
	start := until.Add(5 * time.Second)
	id := reservedSale(t, e, until, start, map[string]any{"require_captcha": true})
	c := card(id)
	status := c + ` [data-role="register-status"]`
	answer := func(cid string) string {
		rec, err := e.Redis.Get(ctx, e.Prefix+":captcha:"+cid).Result()
		require.NoError(t, err)
		return rec[strings.LastIndex(rec, "|")+1:]
	}

	p := openShop(t, e, "/")
	p.do(wait(c + `[data-registration="OPEN"]`))
	p.pasteToken(31)
	p.do(
		click(c+` button[data-role="register"]`),
		wait(`#captcha:not([data-captcha-id=""])`),
		wait(`#captcha-img`),
	)
	require.Equal(t, "Continue to register", p.text("#captcha-submit"))
	solved := p.attr("#captcha", "data-captcha-id")
	p.do(
		chromedp.SetValue(chromedp.CSS("#captcha-answer"), answer(solved)),
		click("#captcha-submit"),
		wait(status+`[data-reg="REGISTERED"]`),
		chromedp.WaitNotVisible(chromedp.CSS("#captcha")),
	)

	q := openShop(t, e, "/")
	q.pasteToken(32)
	q.do(wait(status + `[data-reg="NONE"]`))

	// Registration closed, the sale not started.
	p.do(wait(c + `[data-state="UPCOMING"][data-registration="CLOSED"]`))
	require.Contains(t, p.text(status), "Registered")
	require.Regexp(t, `^starts in \d+:\d\d$`, p.text(c+` [data-role="countdown"]`))
	q.do(wait(c + `[data-state="UPCOMING"][data-registration="CLOSED"]`))
	require.Contains(t, q.text(status), "Registration closed")
	require.False(t, q.visible(c+` button[data-role="register"]`))

	// The start.
	p.do(
		wait(c+`[data-state="ACTIVE"]`),
		click(c+` button[data-role="buy"]`),
		wait(`#order[data-status="WAIT_PAY"]`),
	)
	require.False(t, p.visible("#captcha"), "no captcha at the purchase")
	require.Equal(t, solved, p.attr("#captcha", "data-captcha-id"), "none drawn since the registration's")
	q.do(
		wait(c+`[data-state="ACTIVE"][data-registration="ON_SALE"]`),
		wait(c+` button[data-role="buy"]:disabled`),
	)
	require.Equal(t, "Registrants only", q.text(c+` button[data-role="buy"]`))

	waitOrder(e, 31, p.attr("#order", "data-order-no"), seckill.StatusWaitPay)
	rep := e.RequireInvariants(id)
	require.Equal(t, 1, rep.Orders[seckill.StatusWaitPay])
}
