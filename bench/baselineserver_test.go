package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/testenv"
)

// The admission-only API runs as `seckill-lab bench baseline-server`: it sells
// its scratch sessions (exactly their stock, one 202 per shopper) and, once
// stopped, leaves no key behind in the stack's Redis.
func TestAdmissionOnlyServerProcess(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	scratch := func() []string {
		keys, err := e.Redis.Keys(ctx, "bench-admission-*").Result()
		require.NoError(t, err)
		return keys
	}
	before := scratch()

	srv, err := startBaselineServer(ctx, testenv.LabBinary(t), nil, ServerSpec{Kind: ServerAdmissionOnly,
		JWTSecret: testenv.JWTSecret, WebhookSecret: testenv.WebhookSecret, AdminToken: testenv.AdminToken,
		RedisAddr: e.RedisAddr, MySQLDSN: e.DSN, Stock: 2, PerUserLimit: 1})
	require.NoError(t, err)
	c := newLoadClient("http://" + srv.addr)
	sell := func(session int) map[int]int {
		codes := map[int]int{}
		for user := int64(1); user <= 4; user++ {
			tok, err := auth.IssueToken(testenv.JWTSecret, user, time.Minute, time.Now())
			require.NoError(t, err)
			for range 2 {
				code, body, _, err := c.do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", session), "Bearer "+tok, []byte(`{"quantity":1}`))
				require.NoError(t, err)
				require.Contains(t, []int{202, 409}, code, "%s", body)
				codes[code]++
			}
		}
		return codes
	}
	for _, session := range []int{warmupSession, measuredSession} {
		require.Equal(t, map[int]int{202: 2, 409: 6}, sell(session), "session %d: 2 units sold once each, every other request refused", session)
	}
	require.NotEqual(t, before, scratch(), "the server sells on a scratch prefix of the stack's Redis")
	srv.stop()
	require.ElementsMatch(t, before, scratch(), "the stopped server deleted its scratch keys")
}

// A server of an unknown kind says so and exits; the bench reports it.
func TestBaselineServerUnknownKind(t *testing.T) {
	testenv.SkipShort(t, "the seckill binary (go build)")
	_, err := startBaselineServer(context.Background(), testenv.LabBinary(t), nil, ServerSpec{Kind: "nginx"})
	require.ErrorContains(t, err, `unknown kind "nginx"`)
}
