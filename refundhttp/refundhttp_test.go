package refundhttp_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/refundhttp"
)

var secret = []byte("adapter-secret-0123456789")

func TestRefundThroughTheAdapter(t *testing.T) {
	a := testenv.StartRefundAdapter(t, secret)
	p, err := refundhttp.New(a.URL, secret)
	require.NoError(t, err)
	ctx := context.Background()
	r := seckill.Refund{PaymentID: "pay_1", OrderNo: "7-abc", AmountCents: 500, TraceID: "tr"}
	for range 2 { // asked again (a retry): the same refund
		id, err := p.Refund(ctx, r)
		require.NoError(t, err)
		require.Equal(t, "rf_pay_1", id)
	}
	refunds, _ := a.Refunds()
	require.Len(t, refunds, 1)
	require.Equal(t, r, refunds["pay_1"])

	// Refused for good: CONFLICT, which the refund activity does not retry.
	a.Answer = func(int) (int, string) {
		return http.StatusUnprocessableEntity, `{"message":"amount over the capture"}`
	}
	_, err = p.Refund(ctx, seckill.Refund{PaymentID: "pay_2", AmountCents: 1})
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%v", err)
	require.ErrorContains(t, err, "amount over the capture")
	// Unknown: a 5xx, a 200 without an id, a wrong signature are errors to retry.
	for _, ans := range []struct {
		status int
		body   string
	}{{http.StatusBadGateway, "<html>proxy</html>"}, {http.StatusOK, `{}`}} {
		a.Answer = func(int) (int, string) { return ans.status, ans.body }
		_, err = p.Refund(ctx, seckill.Refund{PaymentID: "pay_3", AmountCents: 1})
		var domain *seckill.Error
		require.Error(t, err)
		require.False(t, errors.As(err, &domain), "retryable, not a domain refusal: %v", err)
	}
	a.Answer = nil
	wrong, err := refundhttp.New(a.URL, []byte("not-the-adapter-secret"))
	require.NoError(t, err)
	_, err = wrong.Refund(ctx, seckill.Refund{PaymentID: "pay_4", AmountCents: 1})
	require.ErrorContains(t, err, "401")
}

func TestNewRefusesBadSettings(t *testing.T) {
	for _, u := range []string{"", "ftp://x/y", "http://", "::"} {
		_, err := refundhttp.New(u, secret)
		require.ErrorContains(t, err, "SECKILL_PAYMENT_REFUND_URL", u)
	}
	_, err := refundhttp.New("https://adapter.internal/refunds", []byte("short"))
	require.ErrorContains(t, err, "SECKILL_PAYMENT_PROVIDER_SECRET")
}
