package api_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// Without Config.Dev (as in `seckill api`) the dev endpoints do not exist,
// and the shop page offers neither dev sign-in nor sandbox payment.
func TestDevEndpointsAreOffByDefault(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	testenv.RequireError(t, e.Do("POST", "/dev/v1/token", "", map[string]any{"user_id": 1}), 404, "NOT_FOUND", "no route")
	testenv.RequireError(t, e.Do("POST", "/dev/v1/orders/1-abc/pay", e.Token(1), map[string]any{}), 404, "NOT_FOUND", "no route")
	page := e.Do("GET", "/", "", nil)
	require.Equal(t, http.StatusOK, page.Status)
	require.Contains(t, string(page.Raw), `data-dev="false"`)
	require.NotContains(t, string(page.Raw), "dev-signin")
}

// In dev, /dev/v1/token signs in as any user, and /dev/v1/orders/{no}/pay
// makes the sandbox provider send the real signed webhook for the order's
// amount; paying twice is a replay, paying another's order a 404.
func TestDevSignInAndPay(t *testing.T) {
	e := testenv.New(t, testenv.Options{Dev: true})
	sess := e.Session(3, 1, 1250)
	page := e.Do("GET", "/", "", nil)
	require.Contains(t, string(page.Raw), `data-dev="true"`)

	testenv.RequireError(t, e.Do("POST", "/dev/v1/token", "", map[string]any{"user_id": 0}), 400, "INVALID_ARGUMENT", "user_id")
	testenv.RequireError(t, e.Do("POST", "/dev/v1/token", "", map[string]any{"user": 3}), 400, "INVALID_ARGUMENT", "unknown field")
	r := e.Do("POST", "/dev/v1/token", "", map[string]any{"user_id": 9})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	tok := r.Str("token")
	require.Equal(t, float64(9), r.Body["user_id"])

	r = e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	no := r.Str("order_no")
	testenv.RequireError(t, e.Do("POST", "/dev/v1/orders/"+no+"/pay", "", nil), 401, "UNAUTHENTICATED", "missing")
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusWaitPay)
	testenv.RequireError(t, e.Do("POST", "/dev/v1/orders/"+no+"/pay", e.Token(10), nil), 404, "NOT_FOUND", "not found")

	r = e.Do("POST", "/dev/v1/orders/"+no+"/pay", tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
	testenv.RequireError(t, e.Do("POST", "/dev/v1/orders/"+no+"/pay", tok, nil), 409, "CONFLICT", "PAID")
	// A second delivery of the same payment (a double click that raced
	// the status) is a replay: still one payment.
	require.Equal(t, http.StatusOK, e.Pay(no, "dev_"+no, "evt_dev_"+no, 1250).Status)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
}

// A dev payment for an order still QUEUED (its workflow never started: no
// start, no relay) goes through: the webhook starts the workflow with the
// payment, and the order ends PAID.
func TestDevPayQueued(t *testing.T) {
	e := testenv.New(t, testenv.Options{Dev: true, WrapFlow: testenv.LoseStarts})
	sess := e.Session(1, 1, 700)
	tok := e.Token(5)
	r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	no := r.Str("order_no")
	require.Equal(t, "QUEUED", e.Do("GET", "/api/v1/orders/"+no, tok, nil).Str("status"))
	r = e.Do("POST", "/dev/v1/orders/"+no+"/pay", tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
	e.RequireInvariants(sess.ID)
}
