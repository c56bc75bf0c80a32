package shop_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// Draw sales (抽签) on the shop page: the shopper registers for the draw
// in the window and reads the draw's commitment; at the start the
// session's workflow draws, the page shows the seed and asks the shopper's
// result: a winner buys, a loser and a shopper who did not register
// cannot, a waitlisted shopper sees the place in line and, once a unit
// comes back, the right passed on.

// drawLead is how far ahead a draw test's registration closes and its
// sale starts: time enough for Chromium to start and a shopper to
// register, on a slow machine too.
const drawLead = 25 * time.Second

// A draw of two units among six registrants (rights of the default ten
// minutes): the commitment before the draw and the seed after, which
// hashes to it and orders the registrants as the page's results say; the
// first winner buys, then cancels, and the unit passes to the first in
// line, whose page, polling, offers Buy; a loser, a shopper who did not
// register and a page that cannot ask (the API's NOT_ELIGIBLE) get no
// Buy. A draw whose registration opens later counts down to it.
func TestBrowserDrawSale(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{})
	start := time.Now().Add(drawLead).Truncate(time.Second)
	id := reservedSale(t, e, start, start, map[string]any{"mode": "draw"})
	c := card(id)
	status := c + ` [data-role="register-status"]`
	buyBtn := c + ` button[data-role="buy"]`
	base := fmt.Sprintf("/api/v1/sessions/%d", id)
	commitment := e.WaitCommitted(id)
	require.Len(t, commitment, 64)
	users := []int64{41}
	for u := int64(42); u <= 46; u++ {
		require.Equal(t, http.StatusCreated, e.Do("POST", base+"/registrations", e.Token(u), nil).Status)
		users = append(users, u)
	}
	later := time.Now().Add(time.Hour).Truncate(time.Second)
	soonID := reservedSale(t, e, later.Add(time.Hour), later.Add(time.Hour),
		map[string]any{"mode": "draw", "register_from": later.Format(time.RFC3339)})
	soon := card(soonID)
	e.WaitCommitted(soonID)

	// Before the draw: the commitment, not the seed; user 41 registers.
	p := openShop(t, e, "/")
	p.do(
		wait(c+`[data-state="UPCOMING"][data-registration="OPEN"][data-draw="PENDING"]`),
		wait(c+` button[data-role="register"]`),
		wait(soon+`[data-registration="SOON"][data-draw="PENDING"]`),
	)
	require.Equal(t, commitment, p.text(c+` [data-role="draw-commitment"]`))
	require.False(t, p.visible(c+` [data-role="draw-seed-line"]`), "the seed is secret until the draw")
	require.Regexp(t, `^The draw is in \d+:\d\d, at the start\.$`, p.text(c+` [data-role="draw-when"]`))
	require.Equal(t, fmt.Sprintf("seckill draw verify --session %d", id), p.text(c+` [data-role="draw-verify-cmd"]`))
	require.Equal(t, "Register for the draw", p.text(c+` button[data-role="register"]`))
	require.Regexp(t, `^Registration is open: it closes in \d+:\d\d\.`, p.text(status))
	require.Regexp(t, `^Registration opens in (59:\d\d|1:00:0[01])\.$`, p.text(soon+` [data-role="register-status"]`))
	require.False(t, p.visible(soon+` button[data-role="register"]`), "not open yet")
	require.Len(t, p.text(soon+` [data-role="draw-commitment"]`), 64)
	p.pasteToken(41)
	p.do(
		click(c+` button[data-role="register"]`),
		wait(status+`[data-reg="REGISTERED"]`),
		chromedp.WaitNotVisible(chromedp.CSS(c+` button[data-role="register"]`)),
	)
	require.Contains(t, p.text(status), "Registered for the draw")
	require.Equal(t, "REGISTERED", e.Do("GET", base+"/registration", e.Token(41), nil).Str("status"))

	// The draw: the seed is shown, it hashes to the commitment, and it
	// orders the registrants: two winners, two in line, two who lost.
	p.do(
		wait(c+`[data-state="ACTIVE"][data-draw="DRAWN"]`),
		wait(c+` [data-role="draw-seed-line"]`),
	)
	shown := p.text(c + ` [data-role="draw-seed"]`)
	seed, err := hex.DecodeString(shown)
	require.NoError(t, err, "seed %q", shown)
	sum := sha256.Sum256(seed)
	require.Equal(t, commitment, hex.EncodeToString(sum[:]), "the seed shown is the one committed to")
	require.Equal(t, e.Do("GET", base, "", nil).Str("draw_seed"), shown)
	require.Contains(t, p.text(c+` [data-role="draw-verify"]`), "SHA-256 is the commitment")
	order := testenv.DrawByHand(seed, users)
	result := map[int]string{0: "WON", 1: "WON", 2: "WAITLISTED", 3: "WAITLISTED", 4: "LOST", 5: "LOST"}
	// The page signed in before the draw learns user 41's result.
	p.do(wait(status + fmt.Sprintf(`[data-reg=%q]`, result[slices.Index(order, 41)])))

	// The first winner buys: Buy, the right's end counting down.
	winner := order[0]
	p.pasteToken(winner)
	p.do(
		wait(status+`[data-reg="WON"]`),
		wait(buyBtn+`:not(:disabled)`),
	)
	require.Regexp(t, `^You won the draw! Your right to buy ends in \d+:\d\d\.$`, p.text(status))
	require.Equal(t, "Buy", p.text(buyBtn))
	p.do(
		click(buyBtn),
		wait(`#order[data-status="WAIT_PAY"]`),
		wait(status+`[data-reg="USED"]`),
		wait(buyBtn+`:disabled`),
	)
	no := p.attr("#order", "data-order-no")
	require.Equal(t, "Right used", p.text(buyBtn))

	// A loser: no Buy, and the API agrees.
	q := openShop(t, e, fmt.Sprintf("/?session=%d", id))
	q.pasteToken(order[4])
	q.do(
		wait(c+`[data-draw="DRAWN"]`),
		wait(status+`[data-reg="LOST"]`),
		wait(buyBtn+`:disabled`),
	)
	require.Equal(t, "Not drawn", q.text(buyBtn))
	require.Contains(t, q.text(status), "Not drawn")
	testenv.RequireError(t, e.BuyWithKey(id, order[4], "", 1), http.StatusForbidden, "NOT_ELIGIBLE", "")

	// A shopper who did not register.
	q.pasteToken(47)
	q.do(
		wait(status+`[data-reg="NONE"]`),
		wait(buyBtn+`:disabled`),
	)
	require.Equal(t, "Drawn registrants only", q.text(buyBtn))
	require.Contains(t, q.text(status), "drawn registrants only")

	// The second in line sees the place.
	q.pasteToken(order[3])
	q.do(wait(status + `[data-reg="WAITLISTED"]`))
	require.Contains(t, q.text(status), "number 2 in line")
	require.Equal(t, "Waitlisted", q.text(buyBtn))

	// The first in line waits; the winner cancels, the unit comes back,
	// the next pass gives it a right, and the polling page offers Buy.
	q.pasteToken(order[2])
	q.do(
		wait(status+`[data-reg="WAITLISTED"]`),
		wait(buyBtn+`:disabled`),
	)
	require.Contains(t, q.text(status), "number 1 in line")
	waitOrder(e, winner, no, seckill.StatusWaitPay)
	p.do(
		click("#cancel-btn"),
		wait(`#order[data-status="CLOSED"]`),
	)
	q.do(
		wait(status+`[data-reg="WON"]`),
		click(buyBtn),
		wait(`#order[data-status="WAIT_PAY"]`),
	)
	passed := q.attr("#order", "data-order-no")

	// A page that cannot ask lets the shopper try; the API's NOT_ELIGIBLE
	// is shown in a draw's words, and Buy goes off.
	p.do(
		click("#order-dismiss"),
		chromedp.WaitNotVisible(chromedp.CSS("#order")),
	)
	p.failFetch("/registration")
	p.pasteToken(48)
	p.do(
		click(buyBtn),
		wait(`#message[data-code="NOT_ELIGIBLE"]`),
		wait(status+`[data-reg="REFUSED"]`),
		wait(buyBtn+`:disabled`),
	)
	require.Contains(t, p.text("#message-text"), "Only shoppers drawn in this sale's draw may buy")
	require.NotEmpty(t, p.text("#message-trace-id"))
	require.Equal(t, "Not eligible", p.text(buyBtn))

	waitOrder(e, winner, no, seckill.StatusClosed)
	waitOrder(e, order[2], passed, seckill.StatusWaitPay)
	rep := e.RequireInvariants(id)
	require.Equal(t, 1, rep.Orders[seckill.StatusWaitPay])
	require.Equal(t, 1, rep.Orders[seckill.StatusClosed])
	require.Equal(t, 1, rep.RedisStock, "the shoppers without a right moved nothing")
}
