package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
)

// Customer service's and finance's CLI, as a viewer: list a sale's orders
// a page at a time, show one, export them as CSV.
func TestOrdersReadCommands(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	sess := e.Session(3, 1, 250)
	ctx := context.Background()
	var placed []string
	for user := int64(1); user <= 3; user++ {
		no := fmt.Sprintf("%d-cs%d", sess.ID, user)
		req := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: no, SessionID: sess.ID, UserID: user, Quantity: 1,
			Slots: []int{1}, ReservedAt: time.Now().UTC(), SKUID: sess.SKUID}, PriceCents: 250, PayTimeout: time.Minute}
		_, _, err := e.DB.CloseOrder(ctx, req, "cancelled")
		require.NoError(t, err)
		placed = append(placed, no)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(testenv.Binary(t), append([]string{"orders", "--api", e.BaseURL}, args...)...)
		cmd.Env = append(e.ProcessEnv(), "SECKILL_OPERATOR_TOKEN="+e.OperatorToken("cli-cs", seckill.RoleViewer))
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		require.NoError(t, cmd.Run(), "%s", errOut.String())
		return out.String()
	}
	var page client.OrderPage
	require.NoError(t, json.Unmarshal([]byte(run("list", "--session", fmt.Sprint(sess.ID), "--limit", "2")), &page))
	require.Len(t, page.Orders, 2)
	require.Equal(t, placed[2], page.Orders[0].OrderNo)
	var rest client.OrderPage
	last := run("list", "--session", fmt.Sprint(sess.ID), "--cursor", page.NextCursor)
	require.NoError(t, json.Unmarshal([]byte(last), &rest))
	require.Len(t, rest.Orders, 1)
	require.Equal(t, placed[0], rest.Orders[0].OrderNo)
	require.NotContains(t, last, "next_cursor", "the last page has none, as the API's")
	var closed client.OrderPage
	require.NoError(t, json.Unmarshal([]byte(run("list", "--session", fmt.Sprint(sess.ID), "--status", "closed")), &closed))
	require.NotEmpty(t, closed.Orders, "a status as typed")
	for _, o := range closed.Orders {
		require.Equal(t, seckill.StatusClosed, o.Status)
	}

	var rec client.OrderRecord
	require.NoError(t, json.Unmarshal([]byte(run("show", placed[1])), &rec))
	require.Equal(t, seckill.StatusClosed, rec.Status)
	require.NotEmpty(t, rec.History)

	rows, err := csv.NewReader(strings.NewReader(run("export", "--session", fmt.Sprint(sess.ID)))).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 4, "a header row and the three orders")

	// A filter of zero or less is refused, not dropped: it would list
	// every order of every sale as if they were the shopper's.
	for _, args := range [][]string{{"--user", "-2"}, {"--session", "0"}, {"--limit", "-1"}} {
		cmd := exec.Command(testenv.Binary(t), append([]string{"orders", "--api", e.BaseURL, "list"}, args...)...)
		cmd.Env = append(e.ProcessEnv(), "SECKILL_OPERATOR_TOKEN="+e.OperatorToken("cli-cs", seckill.RoleViewer))
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%v: %s", args, out)
		require.Contains(t, string(out), args[0]+" must be a positive integer", "%v", args)
		require.NotContains(t, string(out), placed[0])
	}
}
