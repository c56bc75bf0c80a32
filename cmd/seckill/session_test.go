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
	cmd := exec.Command(testenv.Binary(t), append([]string{"session", "--api", e.BaseURL}, args...)...)
	cmd.Env = append(e.ProcessEnv(), "SECKILL_OPERATOR_TOKEN="+e.OperatorToken("cli-ops", seckill.RoleOperator))
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
