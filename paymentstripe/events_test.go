package paymentstripe_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/paymentstripe"
)

// The event's payment is the one the seckill webhook reports; the api
// tests send the same events through a real server.
func TestStripeEventsBecomePayments(t *testing.T) {
	ev := paymentstripe.Events{Secret: "whsec_unit"}
	sign := func(body string, secret string, at time.Time) string {
		return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(body), Secret: secret, Timestamp: at}).Header
	}
	paid := `{"id":"evt_1","object":"event","api_version":"2019-02-19","type":"payment_intent.succeeded",
		"data":{"object":{"id":"pi_1","object":"payment_intent","amount":700,"amount_received":700,"status":"succeeded","metadata":{"order_no":"9-1"}}}}`
	p, err := ev.Payment([]byte(paid), sign(paid, ev.Secret, time.Now()))
	require.NoError(t, err, "an older API version is read all the same")
	require.Equal(t, &seckill.Payment{EventID: "evt_1", PaymentID: "pi_1", OrderNo: "9-1", AmountCents: 700}, p)

	// Not seckill's: another type, an intent of the account's other sales
	// (no order number). They pay nothing, and are acknowledged so that
	// Stripe does not resend them for days.
	for _, other := range []string{
		`{"id":"evt_2","object":"event","type":"customer.created","data":{"object":{"id":"cus_1"}}}`,
		`{"id":"evt_3","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_3","amount_received":700}}}`,
		`{"id":"evt_5","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_5","amount_received":700,"metadata":{"invoice":"in_1"}}}}`,
	} {
		p, err = ev.Payment([]byte(other), sign(other, ev.Secret, time.Now()))
		require.NoError(t, err, other)
		require.Nil(t, p, "pays nothing: %s", other)
	}

	for name, c := range map[string]struct{ body, header, code string }{
		"unsigned":  {paid, "", seckill.EUNAUTHORIZED},
		"forged":    {paid, sign(paid, "whsec_other", time.Now()), seckill.EUNAUTHORIZED},
		"stale":     {paid, sign(paid, ev.Secret, time.Now().Add(-301*time.Second)), seckill.EUNAUTHORIZED},
		"garbled":   {paid, "t=abc,v1=zz", seckill.EUNAUTHORIZED},
		"not JSON":  {`{"id":`, sign(`{"id":`, ev.Secret, time.Now()), seckill.EINVALID},
		"no amount": {`{"id":"evt_4","type":"payment_intent.succeeded","data":{"object":{"id":"pi_4","metadata":{"order_no":"9-1"}}}}`, "", seckill.EINVALID},
	} {
		if c.header == "" && c.code == seckill.EINVALID {
			c.header = sign(c.body, ev.Secret, time.Now())
		}
		_, err := ev.Payment([]byte(c.body), c.header)
		require.Equal(t, c.code, seckill.ErrorCode(err), "%s: %v", name, err)
	}
}
