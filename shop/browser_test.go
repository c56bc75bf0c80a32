package shop_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// The shop page in headless Chromium against a real API (MariaDB, Redis,
// Temporal): what a shopper sees and clicks. The waits are generous and no
// step asserts a duration; a missing Chromium fails the test.

// stepTimeout bounds one wait of the page; a slow CI machine still passes.
const stepTimeout = 60 * time.Second

type page struct {
	t    *testing.T
	e    *testenv.Env
	ctx  context.Context
	mu   sync.Mutex
	errs []string // uncaught exceptions of the page
}

// openShop starts a fresh headless Chromium (its own profile, so its own
// localStorage) and opens path on the Env's API.
func openShop(t *testing.T, e *testenv.Env, path string) *page {
	t.Helper()
	ctx := testenv.Chromium(t, 1200, 900)
	p := &page{t: t, e: e, ctx: ctx}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.IsException() {
				p.mu.Lock()
				p.errs = append(p.errs, m.String())
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, e := range p.errs {
			t.Errorf("uncaught exception in the page: %s", e)
		}
	})
	p.do(chromedp.Navigate(e.BaseURL + path))
	return p
}

// do runs steps, each wait bounded by stepTimeout; on failure it shows
// what the page said.
func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	for i, s := range steps {
		ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
		err := chromedp.Do(ctx, s)
		cancel()
		if err != nil {
			p.t.Fatalf("step %d: %v\npage text:\n%s", i+1, err, p.text("body"))
		}
	}
}

// text returns an element's visible text ("" when it cannot).
func (p *page) text(sel string) string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	return s
}

func (p *page) attr(sel, name string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	r, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
	require.NoError(p.t, err)
	return r.Value
}

// wait waits for a CSS selector to match a visible element.
func wait(sel string) chromedp.Action[chromedp.Void] { return chromedp.WaitVisible(chromedp.CSS(sel)) }

// click clicks sel once it is visible and enabled, on the node itself.
// chromedp.Click presses the mouse where the node's box was when it read
// it: a layout shift in between (a list arriving above the node) sends the
// press elsewhere, and the next step waits for nothing. A disabled button
// ignores this click as it ignores a shopper's.
func click(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		ready := chromedp.Steps(chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.WaitEnabled(chromedp.CSS(sel)))
		if _, err := ready(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		found, err := chromedp.Evaluate[bool](fmt.Sprintf(
			`(function(){var n=document.querySelector(%q);if(!n)return false;n.click();return true})()`, sel))(ctx, t)
		if err == nil && !found {
			err = fmt.Errorf("click %s: no such element", sel)
		}
		return chromedp.Void{}, err
	}
}

func card(id int64) string { return fmt.Sprintf(`li.session[data-session-id="%d"]`, id) }

// pasteToken signs in the way a shopper does outside dev.
func (p *page) pasteToken(user int64) {
	p.t.Helper()
	p.do(
		chromedp.SetValue(chromedp.CSS("#token-input"), p.e.Token(user)),
		click("#token-save"),
		wait(fmt.Sprintf(`#whoami[data-user="%d"]`, user)),
	)
}

// waitOrder waits until the API reports the order in one of want.
func waitOrder(e *testenv.Env, user int64, orderNo string, want ...seckill.Status) {
	e.T.Helper()
	e.Eventually(60*time.Second, "order "+orderNo+" reaches "+fmt.Sprint(want), func() error {
		r := e.Do("GET", "/api/v1/orders/"+orderNo, e.Token(user), nil)
		for _, w := range want {
			if r.Str("status") == string(w) {
				return nil
			}
		}
		return fmt.Errorf("%d %s", r.Status, r.Raw)
	})
}

// (a) buy → WAIT_PAY shown → pay (dev: the sandbox sends the real signed
// webhook) → PAID shown.
func TestBrowserBuyAndPay(t *testing.T) {
	e := testenv.New(t, testenv.Options{Dev: true})
	sess := e.Session(3, 1, 1999)
	p := openShop(t, e, "/")
	c := card(sess.ID)
	p.do(
		wait(c+`[data-state="ACTIVE"]`),
		wait(c+` [data-role="remaining"][data-remaining="3"]`),
		// Dev sign-in as user 5.
		chromedp.SetValue(chromedp.CSS("#dev-user"), "5"),
		click("#dev-signin-btn"),
		wait(`#whoami[data-user="5"]`),
		click(c+` button[data-role="buy"]`),
		wait(`#order[data-status="WAIT_PAY"]`),
		wait(`#pay-btn`),
		wait(`#cancel-btn`),
	)
	no := p.attr("#order", "data-order-no")
	require.True(t, strings.HasPrefix(no, fmt.Sprint(sess.ID)+"-"), no)
	require.Contains(t, p.text("#order-detail"), "pay within")
	require.Contains(t, p.text("#order-detail"), "19.99")

	// Pay sends the shopper to the provider's checkout page (the
	// sandbox's), which sends the signed webhook and links back.
	p.do(
		click("#pay-btn"),
		wait(`#pay`),
	)
	require.Contains(t, p.text("#amount"), "19.99")
	p.do(
		click("#pay"),
		wait(`#message`),
	)
	require.Contains(t, p.text("#message"), "Paid")
	p.do(
		click("#back"),
		wait(`#order[data-status="PAID"]`),
		chromedp.WaitNotVisible(chromedp.CSS("#pay-btn")),
		wait(`#order-dismiss`),
		// The list shows the unit gone.
		wait(c+` [data-role="remaining"][data-remaining="2"]`),
	)
	require.Contains(t, p.text("#order-hint"), "Paid")
	waitOrder(e, 5, no, seckill.StatusPaid)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
}

// (b) outside dev the page offers the provider's checkout too; cancel →
// CLOSED shown and the stock is back.
func TestBrowserCancelGivesStockBack(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(1, 1, 500)
	p := openShop(t, e, "/")
	c := card(sess.ID)
	p.do(wait(c + `[data-state="ACTIVE"]`))
	require.Equal(t, "false", p.attr("body", "data-dev"))
	p.pasteToken(6)
	p.do(
		click(c+` button[data-role="buy"]`),
		wait(`#order[data-status="WAIT_PAY"]`),
		wait(`#cancel-btn`),
		// The last unit is taken: the list says so.
		wait(c+`[data-state="SOLD_OUT"]`),
		wait(c+` button[data-role="buy"]:disabled`),
	)
	require.Contains(t, p.text("#order-hint"), "payment provider")
	require.True(t, p.visible("#pay-btn"), "the pay button opens the provider's checkout outside dev too")

	p.do(
		click("#cancel-btn"),
		wait(`#order[data-status="CLOSED"]`),
		wait(c+`[data-state="ACTIVE"]`),
		wait(c+` [data-role="remaining"][data-remaining="1"]`),
	)
	no := p.attr("#order", "data-order-no")
	waitOrder(e, 6, no, seckill.StatusClosed)
	r := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", sess.ID), "", nil)
	require.Equal(t, float64(1), r.Body["remaining_stock"], "%s", r.Raw)
	e.RequireInvariants(sess.ID)
}

// (c) a buy larger than what is left is refused with the SOLD_OUT message
// and its trace id; once the last unit is gone the session shows SOLD_OUT
// and cannot be bought.
func TestBrowserSoldOut(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(1, 2, 100)
	p := openShop(t, e, "/")
	c := card(sess.ID)
	p.do(wait(c + `[data-state="ACTIVE"]`))
	p.pasteToken(7)
	p.do(
		chromedp.SetValue(chromedp.CSS(c+` select[data-role="qty"]`), "2"),
		click(c+` button[data-role="buy"]`),
		wait(`#message[data-code="SOLD_OUT"]`),
	)
	require.Contains(t, p.text("#message-text"), "Sold out")
	require.NotEmpty(t, p.text("#message-trace-id"), "the trace id is shown for support")

	// Another shopper takes the last unit.
	r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), e.Token(8), nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	p.do(
		wait(c+`[data-state="SOLD_OUT"]`),
		wait(c+` [data-role="state"][data-state="SOLD_OUT"]`),
		wait(c+` button[data-role="buy"]:disabled`),
	)
	require.Equal(t, "Sold out", p.text(c+` button[data-role="buy"]`))
	waitOrder(e, 8, r.Str("order_no"), seckill.StatusWaitPay)
	e.RequireInvariants(sess.ID)
}

// (d) an upcoming session, opened directly with /?session=N, counts down
// to its start and cannot be bought yet; an unknown session says so.
func TestBrowserUpcoming(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	now := time.Now().UTC().Truncate(time.Second)
	sess := &seckill.Session{SKUID: 9, Title: "Tomorrow's sale", PriceCents: 100, TotalStock: 5, PerUserLimit: 1,
		StartAt: now.Add(2 * time.Hour), EndAt: now.Add(3 * time.Hour)}
	require.NoError(t, e.DB.CreateSession(context.Background(), sess, nil))
	_, err := e.Gate.Preheat(context.Background(), sess.ID, sess.TotalStock)
	require.NoError(t, err)

	p := openShop(t, e, fmt.Sprintf("/?session=%d", sess.ID))
	c := card(sess.ID)
	p.do(
		wait(c+`[data-state="UPCOMING"]`),
		wait(c+` button[data-role="buy"]:disabled`),
		wait(`#all-sessions`),
	)
	require.Equal(t, "Not started", p.text(c+` button[data-role="buy"]`))
	// The page reads the server's clock from Date headers, which have whole
	// seconds (it takes the middle: ±0.5 s), and rounds the time left up.
	require.Regexp(t, `^starts in (1:59:\d\d|2:00:0[01])$`, p.text(c+` [data-role="countdown"]`), "about two hours to go")
	require.Contains(t, p.text(c+` [data-role="state"]`), "UPCOMING")

	p.do(
		chromedp.Navigate(e.BaseURL+"/?session=999999"),
		wait(`#message[data-code="NOT_FOUND"]`),
	)
	require.Contains(t, p.text("#message-text"), "does not exist")
	e.RequireInvariants(sess.ID)
}

// onSale stores s on sale from a minute ago for an hour, preheated.
func onSale(t *testing.T, e *testenv.Env, s seckill.Session) *seckill.Session {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	s.StartAt, s.EndAt = now.Add(-time.Minute), now.Add(time.Hour)
	require.NoError(t, e.DB.CreateSession(ctx, &s, nil))
	_, err := e.Gate.Preheat(ctx, s.ID, s.TotalStock)
	require.NoError(t, err)
	return &s
}

// (e) a sale that requires a purchase ticket: the page fetches one and
// sends it with the buy (a buy without one is refused); the order shows in
// My orders and follows its status there; Show opens it again.
func TestBrowserTicketAndMyOrders(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := onSale(t, e, seckill.Session{SKUID: 4, Title: "Ticketed sale", PriceCents: 300, TotalStock: 2, PerUserLimit: 1, RequireTicket: true})
	testenv.RequireError(t, e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), e.Token(10), nil),
		http.StatusForbidden, "FORBIDDEN", "purchase ticket")

	p := openShop(t, e, "/")
	c := card(sess.ID)
	p.do(wait(c + `[data-state="ACTIVE"]`))
	p.pasteToken(9)
	p.do(
		wait(`#my-orders-empty`),
		click(c+` button[data-role="buy"]`),
		wait(`#order[data-status="WAIT_PAY"]`),
	)
	no := p.attr("#order", "data-order-no")
	mine := fmt.Sprintf(`#my-orders-list li[data-order-no=%q]`, no)
	p.do(
		wait(mine+`[data-status="WAIT_PAY"]`),
		click("#cancel-btn"),
		wait(`#order[data-status="CLOSED"]`),
		wait(mine+`[data-status="CLOSED"]`),
		click("#order-dismiss"),
		chromedp.WaitNotVisible(chromedp.CSS("#order")),
		click(mine+` button[data-role="open"]`),
		wait(fmt.Sprintf(`#order[data-order-no=%q][data-status="CLOSED"]`, no)),
	)
	require.Contains(t, p.text(mine), "total 3.00")
	waitOrder(e, 9, no, seckill.StatusClosed)
	e.RequireInvariants(sess.ID)
}

// (f) a sale that requires a human check: Buy shows the captcha; a wrong
// answer is refused and a new captcha drawn; the right one buys.
func TestBrowserCaptcha(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	sess := onSale(t, e, seckill.Session{SKUID: 6, Title: "Checked sale", PriceCents: 100, TotalStock: 1, PerUserLimit: 1, RequireCaptcha: true})
	answer := func(id string) string {
		rec, err := e.Redis.Get(ctx, e.Prefix+":captcha:"+id).Result()
		require.NoError(t, err)
		return rec[strings.LastIndex(rec, "|")+1:]
	}

	p := openShop(t, e, "/")
	c := card(sess.ID)
	p.do(wait(c + `[data-state="ACTIVE"]`))
	p.pasteToken(11)
	p.do(click(c+` button[data-role="buy"]`), wait(`#captcha:not([data-captcha-id=""])`), wait(`#captcha-img`))
	first := p.attr("#captcha", "data-captcha-id")
	wrong := "000000"
	if answer(first) == wrong {
		wrong = "111111"
	}
	p.do(
		chromedp.SetValue(chromedp.CSS("#captcha-answer"), wrong),
		click("#captcha-submit"),
		wait(`#message[data-code="FORBIDDEN"]`),
		wait(fmt.Sprintf(`#captcha:not([data-captcha-id=%q]):not([data-captcha-id=""])`, first)),
	)
	second := p.attr("#captcha", "data-captcha-id")
	p.do(
		chromedp.SetValue(chromedp.CSS("#captcha-answer"), answer(second)),
		click("#captcha-submit"),
		wait(`#order[data-status="WAIT_PAY"]`),
		chromedp.WaitNotVisible(chromedp.CSS("#captcha")),
	)
	waitOrder(e, 11, p.attr("#order", "data-order-no"), seckill.StatusWaitPay)
	e.RequireInvariants(sess.ID)
}

// visible reports whether sel matches a rendered element right now.
func (p *page) visible(sel string) bool {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(
		`(function(){var n=document.querySelector(%q);return !!n && !n.hidden && n.offsetParent!==null})()`, sel)))
	require.NoError(p.t, err)
	return v
}
