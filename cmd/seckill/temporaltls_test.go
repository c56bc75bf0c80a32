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

// A Temporal frontend that demands a client certificate (a TLS door of a
// private CA in front of the dev server, as Temporal Cloud's mTLS or a
// self-hosted cluster's): the api and the worker reach it through
// Temporal's own variables, and an order sells and pays through it. A
// worker without the client certificate stops at start and says what is
// missing.
func TestTemporalWithMTLS(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true, Temporal: true})
	ca := testenv.NewCA(t)
	door := testenv.StartMTLSDoor(t, ca, e.TemporalAddr)
	cert := ca.Issue(t, "seckill")
	tlsEnv := []string{"TEMPORAL_ADDRESS=" + door, "TEMPORAL_TLS=true",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH=" + ca.CertFile, "TEMPORAL_TLS_SERVER_NAME=localhost"}
	withCert := append([]string{"TEMPORAL_TLS_CLIENT_CERT_PATH=" + cert.CertFile, "TEMPORAL_TLS_CLIENT_KEY_PATH=" + cert.KeyFile}, tlsEnv...)

	bare := e.Spawn(e.ProcessEnv(tlsEnv...), "worker")
	code, ended := bare.Wait(60 * time.Second)
	require.True(t, ended, "a worker the door refuses must not hang:\n%s", bare.Output())
	require.NotZero(t, code)
	require.Contains(t, bare.Output(), "TLS without a client certificate")
	require.Contains(t, bare.Output(), "TEMPORAL_TLS_CLIENT_CERT_PATH")

	e.Spawn(e.ProcessEnv(withCert...), "worker")
	_, base := e.SpawnAPI(e.ProcessEnv(withCert...))
	e.BaseURL = base
	sess := e.Session(1, 1, 700)
	shopper := e.Shopper(41)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := shopper.Buy(ctx, sess.ID, client.BuyOptions{Quantity: 1})
	require.NoError(t, err)
	require.Equal(t, seckill.StatusWaitPay, e.WaitStatus(e.Token(41), a.OrderNo, 60*time.Second, seckill.StatusWaitPay))
	res := e.Pay(a.OrderNo, "pay-"+a.OrderNo, "evt-"+a.OrderNo, 700)
	require.Equal(t, 200, res.Status, "%v", res.Body)
	require.Equal(t, seckill.StatusPaid, e.WaitStatus(e.Token(41), a.OrderNo, 60*time.Second, seckill.StatusPaid))

	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
}
