package api_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// Customer service finds orders by sale, shopper, status and time, newest
// first a page at a time, and reads one order's whole story: its status
// changes, its payment, its events and its workflow's link. A viewer may;
// a shopper may not; bad input is refused with what was wrong.
func TestAdminOrders(t *testing.T) {
	e := testenv.New(t, testenv.Options{Configure: func(c *app.Config) { c.TemporalUIURL = "http://ui.test:8233/" }})
	sess := e.Session(10, 3, 250)
	other := e.Session(10, 3, 100)
	ctx := context.Background()
	var placed []string // in sess, oldest first
	for _, user := range []int64{41, 42, 41} {
		a, err := e.Shopper(user).Buy(ctx, sess.ID, client.BuyOptions{})
		require.NoError(t, err)
		e.WaitStatus(e.Token(user), a.OrderNo, 20*time.Second, seckill.StatusWaitPay)
		placed = append(placed, a.OrderNo)
	}
	b, err := e.Shopper(41).Buy(ctx, other.ID, client.BuyOptions{})
	require.NoError(t, err)
	e.WaitStatus(e.Token(41), b.OrderNo, 20*time.Second, seckill.StatusWaitPay)
	require.Equal(t, 200, e.Pay(placed[1], "pay-bo-1", "evt-bo-1", 250).Status)
	e.WaitStatus(e.Token(42), placed[1], 20*time.Second, seckill.StatusPaid)

	viewer := e.Operator("cs-viewer", seckill.RoleViewer)
	first, err := viewer.FindOrders(ctx, seckill.OrderFilter{SessionID: sess.ID}, "", 2)
	require.NoError(t, err)
	require.Equal(t, []string{placed[2], placed[1]}, orderNos(first.Orders), "newest first")
	require.NotEmpty(t, first.NextCursor)
	rest, err := viewer.FindOrders(ctx, seckill.OrderFilter{SessionID: sess.ID}, first.NextCursor, 2)
	require.NoError(t, err)
	require.Equal(t, []string{placed[0]}, orderNos(rest.Orders))
	require.Empty(t, rest.NextCursor, "the end of the list: no next_cursor")
	raw := e.Do("GET", "/admin/v1/orders?session_id="+itoa(sess.ID), e.OperatorToken("cs-viewer", seckill.RoleViewer), nil)
	require.Equal(t, 200, raw.Status, "%s", raw.Raw)
	require.NotContains(t, string(raw.Raw), "next_cursor")

	mine, err := viewer.FindOrders(ctx, seckill.OrderFilter{UserID: 41}, "", 0)
	require.NoError(t, err)
	require.Equal(t, []string{b.OrderNo, placed[2], placed[0]}, orderNos(mine.Orders), "a shopper's orders of every sale")
	_, err = viewer.FindOrders(ctx, seckill.OrderFilter{UserID: -41}, "", 0)
	require.Equal(t, seckill.EINVALID, seckill.ErrorCode(err), "a negative id is refused, not dropped to list every order: %v", err)
	paid, err := viewer.FindOrders(ctx, seckill.OrderFilter{SessionID: sess.ID, Status: seckill.StatusPaid}, "", 0)
	require.NoError(t, err)
	require.Equal(t, []string{placed[1]}, orderNos(paid.Orders))
	future, err := viewer.FindOrders(ctx, seckill.OrderFilter{From: time.Now().Add(time.Hour)}, "", 0)
	require.NoError(t, err)
	require.Empty(t, future.Orders)
	past, err := viewer.FindOrders(ctx, seckill.OrderFilter{SessionID: sess.ID, From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Minute)}, "", 0)
	require.NoError(t, err)
	require.Len(t, past.Orders, 3)

	rec, err := viewer.OrderRecord(ctx, placed[1])
	require.NoError(t, err)
	require.Equal(t, seckill.StatusPaid, rec.Status)
	require.Equal(t, int64(42), rec.UserID)
	require.NotEmpty(t, rec.History)
	last := rec.History[len(rec.History)-1]
	require.Equal(t, seckill.StatusWaitPay, last.From)
	require.Equal(t, seckill.StatusPaid, last.To)
	require.False(t, last.At.IsZero())
	require.Len(t, rec.Payments, 1)
	require.Equal(t, "pay-bo-1", rec.Payments[0].PaymentID)
	require.Equal(t, int64(250), rec.Payments[0].AmountCents)
	require.Empty(t, rec.Refunds)
	require.NotEmpty(t, rec.Events)
	require.Equal(t, seckill.EventOrderPaid, rec.Events[len(rec.Events)-1].Type)
	require.Equal(t, "http://ui.test:8233/namespaces/"+e.App.Config.TemporalNamespace+"/workflows/"+url.PathEscape("order:"+placed[1]),
		rec.WorkflowURL)

	admin := testenv.AdminToken
	testenv.RequireError(t, e.Do("GET", "/admin/v1/orders/nope-1", admin, nil), 404, "NOT_FOUND", "nope-1")
	for _, path := range []string{"/admin/v1/orders", "/admin/v1/orders/" + placed[0], "/admin/v1/orders/export?session_id=" + itoa(sess.ID)} {
		testenv.RequireError(t, e.Do("GET", path, "", nil), 401, "UNAUTHENTICATED", "operator credential")
		testenv.RequireError(t, e.Do("GET", path, e.Token(41), nil), 401, "UNAUTHENTICATED", "operator credential")
	}
	for q, msg := range map[string]string{
		"cursor=!!": "cursor", "cursor=bzA": "cursor", "cursor=eDEy": "cursor",
		"limit=0": "limit", "limit=1001": "limit", "limit=x": "limit",
		"status=LOST": "status", "status=paid": "status",
		"session_id=x": "session_id", "session_id=-1": "session_id", "user_id=0": "user_id",
		"from=yesterday": "from", "to=2026-13-01T00:00:00Z": "to",
		"from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z": "from is after to",
		// A misspelt or repeated filter would list every order, or one
		// filter's orders where the caller meant another's.
		"user=42": `unknown query parameter "user"`, "user_id=": "user_id is empty", "session_id": "session_id is empty", "status=PAID&status=CLOSED": `"status" is given twice`,
	} {
		testenv.RequireError(t, e.Do("GET", "/admin/v1/orders?"+q, admin, nil), 400, "INVALID_ARGUMENT", msg)
	}
	testenv.RequireError(t, e.Do("GET", "/admin/v1/orders/export", admin, nil), 400, "INVALID_ARGUMENT", "session_id")
	testenv.RequireError(t, e.Do("GET", "/admin/v1/orders/export?session_id=1&status=NOPE", admin, nil), 400, "INVALID_ARGUMENT", "status")
	testenv.RequireError(t, e.Do("GET", "/admin/v1/orders/export?session_id=1&limit=5", admin, nil), 400, "INVALID_ARGUMENT", "takes session_id, user_id, status, from, to")
	e.RequireInvariants(sess.ID)
	e.RequireInvariants(other.ID)
}

// Finance exports a sale's orders as CSV: a header row and every order
// exactly once, read a page at a time (three orders a page here, so the
// export crosses several pages), and none of another sale's.
func TestExportOrders(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	api.SetExportPageForTest(e.API.Server, 3)
	sess := e.Session(20, 1, 150)
	other := e.Session(5, 1, 150)
	ctx := context.Background()
	want := map[string]bool{}
	for user := int64(51); user <= 58; user++ {
		a, err := e.Shopper(user).Buy(ctx, sess.ID, client.BuyOptions{})
		require.NoError(t, err)
		e.WaitStatus(e.Token(user), a.OrderNo, 20*time.Second, seckill.StatusWaitPay)
		want[a.OrderNo] = true
	}
	o, err := e.Shopper(51).Buy(ctx, other.ID, client.BuyOptions{})
	require.NoError(t, err)
	e.WaitStatus(e.Token(51), o.OrderNo, 20*time.Second, seckill.StatusWaitPay)

	r := e.Do("GET", "/admin/v1/orders/export?session_id="+itoa(sess.ID), e.OperatorToken("finance", seckill.RoleViewer), nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv"), r.Header.Get("Content-Type"))
	rows, err := csv.NewReader(bytes.NewReader(r.Raw)).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"order_no", "session_id", "sku_id", "user_id", "quantity", "amount_cents", "currency",
		"status", "created_at", "updated_at", "pay_deadline"}, rows[0])
	seen := map[string]bool{}
	for _, row := range rows[1:] {
		require.False(t, seen[row[0]], "order %s exported twice", row[0])
		seen[row[0]] = true
		require.Equal(t, itoa(sess.ID), row[1])
		require.Equal(t, "150", row[5])
		require.Equal(t, "usd", row[6], "the order carries its sale's currency")
		require.Equal(t, string(seckill.StatusWaitPay), row[7])
		_, err := time.Parse(time.RFC3339Nano, row[10])
		require.NoError(t, err, "pay_deadline of a WAIT_PAY order")
	}
	require.Equal(t, want, seen, "every order of the sale, once")

	var buf bytes.Buffer
	require.NoError(t, e.Operator("finance2", seckill.RoleViewer).ExportOrders(ctx, sess.ID, &buf))
	require.Equal(t, string(r.Raw), buf.String(), "the client streams the same CSV")
	empty := e.Do("GET", "/admin/v1/orders/export?session_id=999999999", testenv.AdminToken, nil)
	require.Equal(t, 200, empty.Status)
	require.Equal(t, strings.Join(rows[0], ",")+"\n", string(empty.Raw), "a sale without orders: the header row alone")
	e.RequireInvariants(sess.ID)
	e.RequireInvariants(other.ID)
}

func orderNos(orders []seckill.Order) []string {
	out := make([]string, len(orders))
	for i, o := range orders {
		out[i] = o.OrderNo
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
