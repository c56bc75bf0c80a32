package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
)

// A Temporal frontend that demands a client certificate of a private CA,
// as Temporal Cloud's mTLS or a self-hosted cluster's: the api and the
// worker reach it through Temporal's own variables, and an order sells and
// pays through it. A worker without the client certificate stops at start
// and says what is missing. Two such frontends: a TLS door (HAProxy) in
// front of the dev server, and the durable server's own TLS as `make
// stack` runs it.
func TestTemporalWithMTLS(t *testing.T) {
	t.Run("door", func(t *testing.T) {
		e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
		ca := testenv.NewCA(t)
		cert := ca.Issue(t, "seckill")
		sellThroughMTLS(t, e, testenv.StartMTLSDoor(t, ca, e.TemporalAddr), ca.CertFile, cert)
	})
	t.Run("durable server", func(t *testing.T) {
		ca := testenv.NewCA(t)
		srv := testenv.StartDurableTemporalServerTLS(t, ca)
		e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
		sellThroughMTLS(t, e, srv.Addr, ca.CertFile, ca.Issue(t, "seckill"))
	})
}

func sellThroughMTLS(t *testing.T, e *testenv.Env, addr, caFile string, cert testenv.Pair) {
	tlsEnv := []string{"TEMPORAL_ADDRESS=" + addr, "TEMPORAL_TLS=true",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH=" + caFile, "TEMPORAL_TLS_SERVER_NAME=localhost"}
	withCert := append([]string{"TEMPORAL_TLS_CLIENT_CERT_PATH=" + cert.CertFile, "TEMPORAL_TLS_CLIENT_KEY_PATH=" + cert.KeyFile}, tlsEnv...)

	bare := e.Spawn(e.ProcessEnv(tlsEnv...), "worker")
	code, ended := bare.Wait(60 * time.Second)
	require.True(t, ended, "a worker the server refuses must not hang:\n%s", bare.Output())
	require.NotZero(t, code)
	require.Contains(t, bare.Output(), "TLS without a client certificate")
	require.Contains(t, bare.Output(), "TEMPORAL_TLS_CLIENT_CERT_PATH")

	e.Spawn(e.ProcessEnv(withCert...), "worker")
	_, base := e.SpawnAPI(e.ProcessEnv(withCert...))
	e.BaseURL = base
	sess := e.Session(1, 1, 700)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := e.Shopper(41).Buy(ctx, sess.ID, client.BuyOptions{Quantity: 1})
	require.NoError(t, err)
	require.Equal(t, seckill.StatusWaitPay, e.WaitStatus(e.Token(41), a.OrderNo, 60*time.Second, seckill.StatusWaitPay))
	res := e.Pay(a.OrderNo, "pay-"+a.OrderNo, "evt-"+a.OrderNo, 700)
	require.Equal(t, 200, res.Status, "%v", res.Body)
	require.Equal(t, seckill.StatusPaid, e.WaitStatus(e.Token(41), a.OrderNo, 60*time.Second, seckill.StatusPaid))
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
}
