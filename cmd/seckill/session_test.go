package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
)

// sessionCLI runs `seckill session <args>` as the real binary against the
// Env's API, as the operator cli-ops (SECKILL_OPERATOR_TOKEN), and decodes
// its JSON answer into out.
func sessionCLI(t *testing.T, e *testenv.Env, out any, args ...string) {
	t.Helper()
	sessionCLIAs(t, e, "cli-ops", seckill.RoleOperator, out, args...)
}

// sessionCLIAs is sessionCLI as the operator name of role.
func sessionCLIAs(t *testing.T, e *testenv.Env, name string, role seckill.Role, out any, args ...string) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), append([]string{"session", "--api", e.BaseURL}, args...)...)
	cmd.Env = append(e.ProcessEnv(), "SECKILL_OPERATOR_TOKEN="+e.OperatorToken(name, role))
	raw, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, out), "%s", raw)
}

// The operator's CLI: pause, add stock (retried with its request id: once),
// resume, end; the audit ledger shows each with the token's operator and
// role, and the public view follows.
func TestSessionCommand(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(4, 1, 100)
	id := fmt.Sprint(sess.ID)
	ctx := context.Background()

	var ch client.Changed
	sessionCLI(t, e, &ch, "pause", id)
	require.True(t, ch.Applied)
	require.Equal(t, seckill.SessionPaused, ch.Session.State)
	_, err := e.Shopper(1).Buy(ctx, sess.ID, client.BuyOptions{})
	require.Equal(t, seckill.EPAUSED, seckill.ErrorCode(err), "%v", err)

	for range 2 {
		sessionCLI(t, e, &ch, "add-stock", id, "3", "--request-id", "cli-add-1")
	}
	require.False(t, ch.Applied, "the retry is not applied again")
	require.Equal(t, 7, ch.Session.TotalStock)
	require.NotNil(t, ch.RedisStock)
	require.Equal(t, 7, *ch.RedisStock)

	sessionCLI(t, e, &ch, "resume", id)
	require.Equal(t, seckill.SessionActive, ch.Session.State)
	placed, err := e.Shopper(1).Buy(ctx, sess.ID, client.BuyOptions{})
	require.NoError(t, err)
	sessionCLI(t, e, &ch, "end", id)
	require.Equal(t, seckill.SessionEnded, ch.Session.State)

	var audit []seckill.SessionChange
	sessionCLI(t, e, &audit, "audit", id)
	var actions []seckill.SessionAction
	for _, a := range audit {
		require.Equal(t, "cli-ops", a.Actor)
		require.Equal(t, seckill.RoleOperator, a.ActorRole)
		actions = append(actions, a.Action)
	}
	require.Equal(t, []seckill.SessionAction{seckill.ActionPause, seckill.ActionAddStock, seckill.ActionResume, seckill.ActionEnd}, actions)
	e.WaitStatus(e.Token(1), placed.OrderNo, 20*time.Second, seckill.StatusWaitPay)
	e.RequireInvariants(sess.ID)
}

// A sale of sizes from the CLI: created with --item each, bought by size
// with the client, one pair per shopper across the sizes, stock added to
// one size with --sku.
func TestSessionCreateItems(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	var v seckill.SessionView
	sessionCLIAs(t, e, "cli-admin", seckill.RoleAdmin, &v, "create", "--title", "Runner", "--per-user-limit", "1",
		"--start-at", time.Now().UTC().Add(-time.Second).Format(time.RFC3339), "--end-at", time.Now().UTC().Add(time.Hour).Format(time.RFC3339),
		"--item", "3801:700:2:EU 38", "--item", "3802:800:1:EU 39: narrow")
	require.Equal(t, "Runner", v.Title)
	require.Len(t, v.Items, 2)
	require.Equal(t, "EU 39: narrow", v.Items[1].Title, "the title comes last and may hold colons")
	require.Equal(t, 3, v.TotalStock)
	_, err := e.Client().Preheat(ctx, v.ID, false)
	require.NoError(t, err)

	won, err := e.Shopper(1).Buy(ctx, v.ID, client.BuyOptions{SKUID: 3802, IdempotencyKey: testenv.KeyAt(time.Now())})
	require.NoError(t, err)
	_, err = e.Shopper(1).Buy(ctx, v.ID, client.BuyOptions{SKUID: 3801, IdempotencyKey: testenv.KeyAt(time.Now())})
	require.Equal(t, seckill.ELIMIT, seckill.ErrorCode(err), "one pair per shopper across the sizes: %v", err)
	_, err = e.Shopper(2).Buy(ctx, v.ID, client.BuyOptions{SKUID: 3802, IdempotencyKey: testenv.KeyAt(time.Now())})
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(err), "EU 39 sold out: %v", err)
	o, err := e.Shopper(1).WaitOrder(ctx, won.OrderNo, seckill.StatusWaitPay)
	require.NoError(t, err)
	require.Equal(t, int64(3802), o.SKUID)
	require.Equal(t, int64(800), o.AmountCents)

	var ch client.Changed
	sessionCLI(t, e, &ch, "add-stock", fmt.Sprint(v.ID), "2", "--sku", "3802")
	require.True(t, ch.Applied)
	require.Equal(t, 5, ch.Session.TotalStock)
	require.Equal(t, 2, ch.Session.Items[1].RemainingStock, "the units went to EU 39")
	require.Equal(t, 2, ch.Session.Items[0].RemainingStock)
	e.RequireInvariants(v.ID)
}

// A reserved sale's registration window from the CLI: set at creation,
// then moved with the mode and a draw's rights by update before it opens,
// every field given reaching the API (the client once sent only the
// first five, and an update of the mode alone was "nothing to change").
func TestSessionRegistrationWindow(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	at := func(d time.Duration) string {
		return time.Now().UTC().Add(d).Truncate(time.Second).Format(time.RFC3339)
	}
	from, until := at(time.Hour), at(2*time.Hour)
	var v seckill.SessionView
	sessionCLIAs(t, e, "cli-admin", seckill.RoleAdmin, &v, "create", "--title", "Console", "--sku", "9", "--price-cents", "100",
		"--stock", "2", "--start-at", at(3*time.Hour), "--end-at", at(4*time.Hour), "--mode", "reserved",
		"--register-from", from, "--register-until", until)
	require.Equal(t, seckill.ModeReserved, v.Mode)
	require.Equal(t, from, v.RegisterFrom.UTC().Format(time.RFC3339))
	require.Equal(t, until, v.RegisterUntil.UTC().Format(time.RFC3339))

	var ch client.Changed
	later, sooner := at(80*time.Minute), at(90*time.Minute)
	sessionCLIAs(t, e, "cli-admin", seckill.RoleAdmin, &ch, "update", fmt.Sprint(v.ID), "--mode", "draw", "--right-ttl-seconds", "120",
		"--register-from", later, "--register-until", sooner)
	require.True(t, ch.Applied)
	require.Equal(t, seckill.ModeDraw, ch.Session.Mode)
	require.Equal(t, 120, ch.Session.RightTTLSeconds)
	require.Equal(t, later, ch.Session.RegisterFrom.UTC().Format(time.RFC3339))
	require.Equal(t, sooner, ch.Session.RegisterUntil.UTC().Format(time.RFC3339))
	sessionCLIAs(t, e, "cli-admin", seckill.RoleAdmin, &ch, "update", fmt.Sprint(v.ID), "--register-until", until)
	require.Equal(t, until, ch.Session.RegisterUntil.UTC().Format(time.RFC3339))
	require.Equal(t, later, ch.Session.RegisterFrom.UTC().Format(time.RFC3339), "what was not given stays")
	e.RequireInvariants(v.ID)
}
