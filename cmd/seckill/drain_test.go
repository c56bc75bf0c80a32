package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/buildinfo"
	"github.com/seckill/seckill/internal/testenv"
)

// `seckill api` told to stop (SIGTERM, as Kubernetes and Docker stop it)
// leaves its balancer first: /readyz answers 503 at once while purchases
// and reads are still served for SECKILL_DRAIN_DELAY; then it drains and
// exits. Before that, it says which build it is on /healthz and /metrics,
// as `seckill version` does, and `seckill healthcheck` (the image's
// HEALTHCHECK) finds it healthy at the API's address or, where no API
// listens, at the worker's; once it is gone, unhealthy.
func TestAPIDrainsOnSIGTERM(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	addr := testenv.FreeAddr(t)
	// Far longer than the few requests below take, however busy the machine.
	api := e.Spawn(e.ProcessEnv("SECKILL_HTTP_ADDR="+addr, "SECKILL_DRAIN_DELAY=10s"), "api")
	shop := e.Shopper(1)
	shop.BaseURL = "http://" + addr
	ctx := context.Background()
	e.Eventually(30*time.Second, "api ready", func() error { return shop.Ready(ctx) })

	out, err := exec.Command(testenv.Binary(t), "version").Output()
	require.NoError(t, err)
	resp, err := http.Get(shop.BaseURL + "/healthz")
	require.NoError(t, err)
	var health buildinfo.Health
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&health))
	resp.Body.Close()
	b := health.Info
	require.Equal(t, "ok", health.Status)
	require.Equal(t, fmt.Sprintf("version     %s\ncommit      %s\nbuild_time  %s\ngo_version  %s\n", b.Version, b.Commit, b.BuildTime, b.GoVersion),
		string(out), "/healthz and `seckill version` tell the same build")
	metrics, err := shop.Metrics(ctx)
	require.NoError(t, err)
	require.Contains(t, metrics, fmt.Sprintf(`seckill_build_info{commit=%q,go_version=%q,version=%q} 1`, b.Commit, b.GoVersion, b.Version))

	healthcheck := func(apiAddr, workerAddr string) error {
		cmd := exec.Command(testenv.Binary(t), "healthcheck")
		cmd.Env = e.ProcessEnv("SECKILL_HTTP_ADDR="+apiAddr, "SECKILL_WORKER_HTTP_ADDR="+workerAddr)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	require.NoError(t, healthcheck(addr, ""))
	require.NoError(t, healthcheck(testenv.FreeAddr(t), addr), "nothing on the API's address: the worker's")

	sess := e.Session(2, 1, 100)
	require.NoError(t, api.Signal(syscall.SIGTERM))
	e.Eventually(5*time.Second, "readyz 503 while still serving", func() error {
		err := shop.Ready(ctx)
		var ce *client.Error
		if errors.As(err, &ce) && ce.Meta.StatusCode == http.StatusServiceUnavailable && strings.Contains(ce.Err.Message, "draining") {
			return nil
		}
		return fmt.Errorf("readyz: %v", err)
	})
	acc, err := shop.Buy(ctx, sess.ID, client.BuyOptions{Quantity: 1})
	require.NoError(t, err, "a purchase during the drain delay")
	_, err = shop.Order(ctx, acc.OrderNo)
	require.NoError(t, err, "a read during the drain delay")

	code, ok := api.Wait(30 * time.Second)
	require.True(t, ok, "the API exits after the delay")
	require.Zero(t, code, "the API exits cleanly")
	require.Error(t, shop.Ready(ctx), "nothing listens any more")
	require.Error(t, healthcheck(addr, ""), "healthcheck fails with the process gone")
	e.WaitStatus(e.Token(1), acc.OrderNo, 30*time.Second, seckill.StatusWaitPay)
	e.RequireInvariants(sess.ID)
}
