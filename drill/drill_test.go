package drill_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/drill"
	"github.com/seckill/seckill/internal/testenv"
)

func config(e *testenv.Env) drill.Config {
	c := drill.Config{
		BaseURL: e.BaseURL, AdminToken: testenv.AdminToken, JWTSecret: testenv.JWTSecret,
		WebhookSecret: testenv.WebhookSecret, Stock: 20, PerUserLimit: 1, Users: 60, Tries: 2,
		PayRatio: 0.5, Settle: 90 * time.Second, IssueToken: api.IssueToken,
	}
	if testing.Verbose() {
		c.Progress = os.Stderr
	}
	return c
}

func requireOK(t *testing.T, e *testenv.Env, res *drill.Result, err error) {
	t.Helper()
	require.NoError(t, err)
	require.True(t, res.OK, "problems: %v\nresult: %+v", res.Problems, res)
	require.Equal(t, 20, res.Accepted)
	e.RequireInvariants(res.SessionID)
}

// The worker process is killed (SIGKILL) in the middle of a burst and a new
// one started: every accepted order reaches WAIT_PAY exactly once, and the
// rest of the sale (payments, cancels, a late payment) completes.
func TestDrillWorkerKilledMidBurst(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	first := e.Spawn(e.ProcessEnv(), "worker")
	c := config(e)
	c.DuringBurst = first.Kill
	c.AfterBurst = func() { e.Spawn(e.ProcessEnv(), "worker") }
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
}

// MySQL is unreachable for a while during the burst: admission goes on in
// Redis, the order activities fail and retry, and once MySQL is back every
// accepted order completes.
func TestDrillMySQLOutage(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	outage := e.StartFlakyWorker()
	c := config(e)
	c.DuringBurst = func() { outage.Store(true) }
	c.AfterBurst = func() {
		time.Sleep(2 * time.Second)
		outage.Store(false)
	}
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
}
