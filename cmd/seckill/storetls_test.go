package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
)

// Redis (redis-server's --tls-port with tls-auth-clients) and MySQL
// (MariaDB with SSL, a user that must present a certificate) behind a
// private CA: the api and the worker reach both with
// SECKILL_{REDIS,MYSQL}_{CA,CERT,KEY}_FILE, and an order sells and pays.
// Without the client certificate a process stops at start.
func TestStoresWithPrivateCATLS(t *testing.T) {
	ca := testenv.NewCA(t)
	mysqlAddr := testenv.StartMariaDBTLS(t, ca)
	redisPlain, redisTLS := testenv.StartRedisTLS(t, ca)
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true, Temporal: true,
		MySQLServer: mysqlAddr, RedisServer: redisPlain})
	cert := ca.Issue(t, "seckill")
	dsn := strings.Replace(e.DSN, "root:@", testenv.TLSUser+":@", 1)
	tlsEnv := []string{"SECKILL_MYSQL_DSN=" + dsn, "SECKILL_REDIS_ADDR=" + redisTLS,
		"SECKILL_MYSQL_CA_FILE=" + ca.CertFile, "SECKILL_REDIS_CA_FILE=" + ca.CertFile}
	certs := []string{
		"SECKILL_MYSQL_CERT_FILE=" + cert.CertFile, "SECKILL_MYSQL_KEY_FILE=" + cert.KeyFile,
		"SECKILL_REDIS_CERT_FILE=" + cert.CertFile, "SECKILL_REDIS_KEY_FILE=" + cert.KeyFile,
	}

	for _, c := range []struct {
		env  []string
		says string
	}{
		{append(append([]string{}, tlsEnv...), certs[2:]...), "Access denied"}, // MySQL: REQUIRE X509
		// Redis: tls-auth-clients. In TLS 1.3 the server refuses the
		// client's missing certificate after the handshake: the client
		// reads the alert, or, when it writes first, a reset.
		{append(append([]string{}, tlsEnv...), certs[:2]...), regexp.QuoteMeta("redis "+redisTLS+": ") + ".*(certificate required|connection reset by peer)"},
	} {
		p := e.Spawn(e.ProcessEnv(c.env...), "worker")
		code, ended := p.Wait(60 * time.Second)
		require.True(t, ended, "the worker must stop:\n%s", p.Output())
		require.NotZero(t, code)
		require.Regexp(t, c.says, p.Output())
	}

	all := append(tlsEnv, certs...)
	e.Spawn(e.ProcessEnv(all...), "worker")
	_, base := e.SpawnAPI(e.ProcessEnv(all...))
	e.BaseURL = base
	sess := e.Session(1, 1, 500)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := e.Shopper(7).Buy(ctx, sess.ID, client.BuyOptions{Quantity: 1})
	require.NoError(t, err)
	require.Equal(t, seckill.StatusWaitPay, e.WaitStatus(e.Token(7), a.OrderNo, time.Minute, seckill.StatusWaitPay))
	res := e.Pay(a.OrderNo, "pay-"+a.OrderNo, "evt-"+a.OrderNo, 500)
	require.Equal(t, 200, res.Status, "%v", res.Body)
	require.Equal(t, seckill.StatusPaid, e.WaitStatus(e.Token(7), a.OrderNo, time.Minute, seckill.StatusPaid))
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
}
