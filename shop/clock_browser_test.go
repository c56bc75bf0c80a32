package shop_test

import (
	"context"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	seckillapp "github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// clockScenarios runs the page's SeckillClock (clock.js) on made-up
// clocks: an answer asked at host time 0 and received after rtt, the
// server's clock at phase ms into its second while it answered (its Date
// header that second, or a second older as a server that refreshes Date
// once a second sends), X-Seckill-Time with it when stamped; then the
// host's clock drifts by drift and a key is stamped 100 ms later. It
// returns how far each key is ahead of the server's clock (negative:
// behind), in ms.
const clockScenarios = `(function () {
  var out = [];
  [true, false].forEach(function (stamped) {
    [0, 1, 250, 499, 500, 750, 999].forEach(function (phase) {
      [2, 60, 300].forEach(function (rtt) {
        [0, 1000].forEach(function (dateLag) {
          [-500, 500].forEach(function (drift) {
            var server = 1800000000000 + phase; // the server's clock while it answered
            var host = 0;
            var c = new SeckillClock(function () { return host; });
            var h = { "Date": new Date(Math.floor((server - dateLag) / 1000) * 1000).toUTCString() };
            if (stamped) h["X-Seckill-Time"] = String(server);
            c.sample({ get: function (k) { return h[k] || null; } }, 0, rtt);
            host = rtt + drift + 100;
            var serverNow = server + rtt / 2 + 100;
            out.push({ stamped: stamped, phase: phase, rtt: rtt, dateLag: dateLag, drift: drift, ahead: c.now() - serverNow });
          });
        });
      });
    });
  });
  return out;
})()`

type clockCase struct {
	Stamped             bool
	Phase, RTT, DateLag int
	Drift               int
	Ahead               float64
}

// The page's key clock tolerates its host's clock drifting by half a
// second after the last answer: stamped with the server's milliseconds
// (X-Seckill-Time on the reads), a key stays within the server's second
// of tolerance (seckill.KeyClockSkew) at every phase of the server's
// second, either way; from Date alone it could not (kept as the fallback,
// and shown here to miss). In the shop itself, a host clock set half a
// second ahead right before the click still buys, with a key the server
// takes.
func TestBrowserKeyClockToleratesHostDrift(t *testing.T) {
	keys := &keyRecorder{}
	e := testenv.New(t, testenv.Options{WrapGate: func(g seckillapp.APIGate) seckillapp.APIGate { keys.APIGate = g; return keys }})
	sess := e.Session(3, 1, 100)
	p := openShop(t, e, "/")
	c := card(sess.ID)
	p.do(wait(c + `[data-state="ACTIVE"]`))

	var cases []clockCase
	p.do(func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		var err error
		cases, err = chromedp.Evaluate[[]clockCase](clockScenarios)(ctx, tg)
		return chromedp.Void{}, err
	})
	require.NotEmpty(t, cases)
	skew := float64(seckill.KeyClockSkew.Milliseconds())
	dateMissed := false
	for _, k := range cases {
		if !k.Stamped {
			dateMissed = dateMissed || k.Ahead > skew || k.Ahead < -skew
			continue
		}
		require.LessOrEqual(t, k.Ahead, skew/2+float64(k.RTT)/2+1, "a key ahead of the server beyond the drift: %+v", k)
		require.GreaterOrEqual(t, k.Ahead, -skew/2-float64(k.RTT)/2-1, "a key behind the server beyond the drift: %+v", k)
	}
	require.True(t, dateMissed, "from Date alone some phase is off by a second: the stamp is what makes the drift tolerable")

	// The shopper's host clock jumps half a second ahead just before the
	// click: the key is taken (202), not refused as ahead of the server.
	p.pasteToken(21)
	p.do(func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](`(function () {
  var real = Date.now;
  Date.now = function () { return real.call(Date) + 500; };
  return true;
})()`)(ctx, tg)
		return chromedp.Void{}, err
	}, click(c+` button[data-role="buy"]`), wait(`#order[data-status="WAIT_PAY"]`))
	waitOrder(e, 21, p.attr("#order", "data-order-no"), seckill.StatusWaitPay)
	keys.mu.Lock()
	got := append([]string(nil), keys.keys...)
	keys.mu.Unlock()
	require.Len(t, got, 1)
	_, ok := admission.KeyTime(got[0])
	require.True(t, ok, "a UUIDv7: %s", got[0])
	e.RequireInvariants(sess.ID)
}

// keyRecorder keeps the Idempotency-Key of every admission.
type keyRecorder struct {
	seckillapp.APIGate
	mu   sync.Mutex
	keys []string
}

func (g *keyRecorder) AdmitAttempt(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error) {
	g.mu.Lock()
	g.keys = append(g.keys, a.IdempotencyKey)
	g.mu.Unlock()
	return g.APIGate.AdmitAttempt(ctx, a)
}
