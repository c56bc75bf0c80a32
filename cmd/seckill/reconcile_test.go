package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// reconcileCLI runs `seckill reconcile --session id` as the real binary and
// returns its report and exit status.
func reconcileCLI(t *testing.T, e *testenv.Env, id int64, env ...string) (seckill.Report, int) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), "reconcile", "--session", fmt.Sprint(id))
	cmd.Env = e.ProcessEnv(env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	var r seckill.Report
	require.NoError(t, json.Unmarshal(out, &r), "stdout %s, stderr %s", out, stderr.String())
	return r, code
}

// `seckill reconcile` exits 2 when the report is not ok: here orders stuck
// past the configured pay timeout + SECKILL_SWEEP_GRACE, and a session on
// sale whose Redis state is gone. 0 when it is ok.
func TestReconcileCommandExitStatus(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	sess := e.Session(3, 1, 100)
	ctx := context.Background()
	r, code := reconcileCLI(t, e, sess.ID)
	require.Zero(t, code)
	require.True(t, r.OK, "%v", r.Problems)

	// A reservation whose workflow never started, no relay running.
	no := fmt.Sprintf("%d-stuck", sess.ID)
	_, _, err := e.Gate.Admit(ctx, sess, 7, 1, no, "trace-stuck", time.Now().Add(-2*time.Second))
	require.NoError(t, err)
	r, code = reconcileCLI(t, e, sess.ID)
	require.Zero(t, code, "in flight within the pay timeout: not a problem")
	require.Equal(t, 1, r.InFlight)
	r, code = reconcileCLI(t, e, sess.ID, "SECKILL_PAY_TIMEOUT=1s", "SECKILL_SWEEP_GRACE=500ms")
	require.Equal(t, 2, code)
	require.False(t, r.OK)
	require.Equal(t, 1, r.StuckOrders)
	n, err := e.Gate.Release(ctx, sess.ID, no) // what the sweep does (tested in package sweep)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.RequireInvariants(sess.ID)

	// Redis lost the session (nothing sold: the invariants are not at stake).
	keys, err := e.Redis.Keys(ctx, fmt.Sprintf("%s:{s%d}:*", e.Prefix, sess.ID)).Result()
	require.NoError(t, err)
	require.NoError(t, e.Redis.Del(ctx, keys...).Err())
	r, code = reconcileCLI(t, e, sess.ID)
	require.Equal(t, 2, code)
	require.False(t, r.OK)
	require.False(t, r.Preheated)
	require.Contains(t, strings.Join(r.Problems, "; "), "no Redis state")
}
