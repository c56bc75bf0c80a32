package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A draw sale of sizes on the real services, created and registered for
// through the API: each shopper registers for one size; the published
// list names each one's size; at the start the session's workflow draws
// each size among its own registrants (the draw by hand agrees, and
// `seckill draw verify` checks every size); a winner's right buys the
// size drawn and no other; a waitlisted shopper's place counts that
// size's line only; the invariants hold.
func TestDrawSaleOfSizes(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	t.Setenv("SECKILL_MYSQL_DSN", e.DSN)
	ctx := context.Background()
	start := time.Now().Add(6 * time.Second).Truncate(time.Second)
	created := e.Do("POST", "/admin/v1/sessions", e.OperatorToken("ana", seckill.RoleAdmin), map[string]any{
		"title": "Sneaker", "per_user_limit": 1, "mode": "draw", "right_ttl_seconds": 60,
		"items": []map[string]any{{"sku_id": 38, "title": "EU 38", "price_cents": 700, "stock": 2},
			{"sku_id": 39, "title": "EU 39", "price_cents": 800, "stock": 1}},
		"start_at": start.Format(time.RFC3339), "end_at": start.Add(time.Hour).Format(time.RFC3339)})
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
	id := int64(created.Body["id"].(float64))
	base := fmt.Sprintf("/api/v1/sessions/%d", id)
	e.WaitCommitted(id)

	sizes := map[int64]int64{}
	for u := int64(1); u <= 10; u++ {
		sizes[u] = 38 + u%2
		r := e.Do("POST", base+"/registrations", e.Token(u), map[string]any{"sku_id": sizes[u]})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	}
	testenv.RequireError(t, e.Do("POST", base+"/registrations", e.Token(11), nil), 400, "INVALID_ARGUMENT", "sku_id is required")

	var drawn *seckill.Session
	e.Eventually(30*time.Second, "the session's workflow draws at the start", func() error {
		s, _, err := e.DB.Session(ctx, id)
		if err == nil && !s.Drawn() {
			err = fmt.Errorf("not drawn")
		}
		drawn = s
		return err
	})
	seed, err := hex.DecodeString(drawn.DrawSeed)
	require.NoError(t, err)
	list := e.Do("GET", base+"/registrants", "", nil)
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Raw)
	require.Contains(t, string(list.Raw), "1 39\n2 38\n", "each line names its size")
	sum := sha256.Sum256(list.Raw)
	require.Equal(t, drawn.RegistrantsDigest, hex.EncodeToString(sum[:]))
	require.Equal(t, hex.EncodeToString(testenv.DigestSizesByHand(sizes)), drawn.RegistrantsDigest)
	want := testenv.DrawSizesByHand(seed, sizes)

	status := func(user int64) *testenv.Response {
		r := e.Do("GET", base+"/registration", e.Token(user), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		return r
	}
	w38, w39 := want[38][0], want[39][0]
	won := status(w39)
	require.Equal(t, "WON", won.Str("status"))
	require.EqualValues(t, 39, won.Body["sku_id"])
	require.Equal(t, "WAITLISTED", status(want[39][1]).Str("status"))
	require.EqualValues(t, 1, status(want[39][1]).Body["position"], "first in EU 39's line")
	require.Equal(t, "WAITLISTED", status(want[38][2]).Str("status"))
	require.EqualValues(t, 1, status(want[38][2]).Body["position"], "first in EU 38's line")
	require.Equal(t, "LOST", status(want[39][2]).Str("status"))

	testenv.RequireError(t, e.Do("POST", base+"/orders", e.Token(w39), map[string]any{"sku_id": 38}), 403, "NOT_ELIGIBLE", "item 38")
	for _, u := range []int64{w38, w39} {
		r := e.Do("POST", base+"/orders", e.Token(u), map[string]any{"sku_id": sizes[u]})
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
		e.WaitStatus(e.Token(u), r.Str("order_no"), 15*time.Second, seckill.StatusWaitPay)
	}

	out, err := execute(ctx, "draw", "verify", "--session", strconv.FormatInt(id, 10), "--user", strconv.FormatInt(w39, 10))
	require.NoError(t, err)
	require.Contains(t, out, "draw verified")
	require.Contains(t, out, "item 38: stock at the draw 2: 4 positions (2 winners, 2 waitlisted)")
	require.Contains(t, out, "item 39: stock at the draw 1: 2 positions (1 winners, 1 waitlisted)")
	require.Contains(t, out, fmt.Sprintf("user %d is line %d of the list for item 39, drawn at position 1 (WON)\n", w39, w39))
	e.RequireInvariants(id)
}
