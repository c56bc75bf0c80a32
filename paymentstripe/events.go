package paymentstripe

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seckill/seckill"
)

// HeaderSignature carries Stripe's signature of an event.
const HeaderSignature = "Stripe-Signature"

// eventTolerance is how old a signed event may be before it counts as a
// replay: the tolerance of the seckill webhook too.
const eventTolerance = 300 * time.Second

// Events verifies the events Stripe sends to the webhook endpoint
// (POST /api/v1/payments/stripe/webhook) and turns the ones that pay an
// order into the domain's payment.
type Events struct {
	// Secret is the endpoint's signing secret (SECKILL_STRIPE_WEBHOOK_SECRET, whsec_…).
	Secret string
}

// Payment verifies payload against its Stripe-Signature header and
// returns the payment a payment_intent.succeeded event reports: the event
// id, the intent id, the order number of its metadata and the amount
// received. Any other event type, and an intent without an order number
// (not seckill's), pays nothing (nil, nil). A missing, bad or stale
// signature is UNAUTHENTICATED; an event of ours that cannot be applied
// (no amount, fields too long) is INVALID_ARGUMENT.
func (e Events) Payment(payload []byte, signature string) (*seckill.Payment, error) {
	// The event's API version may differ from stripe-go's: only the fields
	// read below matter, and they are stable across versions.
	ev, err := webhook.ConstructEventWithOptions(payload, signature, e.Secret,
		webhook.ConstructEventOptions{Tolerance: eventTolerance, IgnoreAPIVersionMismatch: true})
	switch {
	case errors.Is(err, webhook.ErrNotSigned):
		return nil, seckill.Errorf(seckill.EUNAUTHORIZED, "missing %s header", HeaderSignature)
	case errors.Is(err, webhook.ErrInvalidHeader), errors.Is(err, webhook.ErrNoValidSignature):
		return nil, seckill.Errorf(seckill.EUNAUTHORIZED, "%s does not match the event", HeaderSignature)
	case errors.Is(err, webhook.ErrTooOld):
		return nil, seckill.Errorf(seckill.EUNAUTHORIZED, "%s timestamp is outside the %s tolerance", HeaderSignature, eventTolerance)
	case err != nil:
		// Signed, so Stripe's, yet not an event: nothing to apply.
		return nil, seckill.Errorf(seckill.EINVALID, "the event is not a Stripe event object")
	}
	if ev.Type != stripe.EventTypePaymentIntentSucceeded {
		return nil, nil
	}
	var pi stripe.PaymentIntent
	if ev.Data == nil || json.Unmarshal(ev.Data.Raw, &pi) != nil {
		return nil, seckill.Errorf(seckill.EINVALID, "event %s carries no payment_intent object", ev.ID)
	}
	if pi.Metadata[MetadataOrderNo] == "" {
		// An intent seckill did not create (the account's other sales):
		// nothing of ours, and a refusal would be resent for days.
		return nil, nil
	}
	p := &seckill.Payment{EventID: ev.ID, PaymentID: pi.ID, OrderNo: pi.Metadata[MetadataOrderNo], AmountCents: pi.AmountReceived,
		Currency: string(pi.Currency)}
	for _, f := range []struct{ name, v string }{
		{"id", p.EventID}, {"data.object.id", p.PaymentID}, {"data.object.metadata." + MetadataOrderNo, p.OrderNo},
	} {
		if f.v == "" || len(f.v) > 128 {
			return nil, seckill.Errorf(seckill.EINVALID, "event field %q must be a string of 1 to 128 bytes", f.name)
		}
	}
	if p.AmountCents <= 0 {
		return nil, seckill.Errorf(seckill.EINVALID, "event %s: data.object.amount_received must be positive", ev.ID)
	}
	return p, nil
}
