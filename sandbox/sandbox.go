// Package sandbox is the payment provider of `seckill dev`, the tests and
// the bench: it moves no money. It opens a payment per order with a hosted
// checkout page under /dev/checkout/ (checkout.go), pays by sending the
// real signed webhook to the API (or, on request, "loses" it, for drills),
// answers the close's question "paid or not?", cancels, and records
// refunds (idempotent on the payment id) so a test can check that every
// refund was made exactly once.
//
// Payments live in Redis under the deployment's prefix, so every API and
// worker process of a stack sees the same ones: the API opens a payment,
// the page pays it, a worker asks about it at the deadline.
package sandbox

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
)

// Name is the provider's name (SECKILL_PAYMENT_PROVIDER=sandbox).
const Name = "sandbox"

// CheckoutPath is where the hosted checkout pages are served: the API
// mounts the provider's handler under it.
const CheckoutPath = "/dev/checkout/"

// keep is how long a payment is remembered: past any pay deadline and
// grace, long enough for a late webhook's refund.
const keep = 24 * time.Hour

// Provider is the sandbox payment provider.
type Provider struct {
	// APIBase is the seckill API the webhooks go to (http://host:port).
	APIBase string
	// CheckoutBase is the API as shoppers' browsers reach it, where the
	// checkout pages are linked (SECKILL_PUBLIC_URL); APIBase when empty.
	CheckoutBase string
	// Secret signs the webhooks (SECKILL_WEBHOOK_SECRET) and makes the
	// payment ids, so a checkout URL cannot be guessed from an order number.
	Secret []byte
	Client *http.Client
	// Redis holds the payments, under Prefix.
	Redis  goredis.UniversalClient
	Prefix string
	// Now is the provider's clock (time.Now when nil).
	Now func() time.Time

	// refunds are the refunds made when no Redis is configured.
	mu      sync.Mutex
	refunds map[string]seckill.Refund // payment id → refund
}

// Name implements seckill.PaymentProvider.
func (p *Provider) Name() string { return Name }

// PaymentID is the sandbox payment of an order: derived, so asking for an
// order's payment needs no index, and keyed, so it cannot be guessed.
func (p *Provider) PaymentID(orderNo string) string {
	m := hmac.New(sha256.New, p.Secret)
	m.Write([]byte("sandbox-payment:" + orderNo))
	return "sbx_" + hex.EncodeToString(m.Sum(nil))[:24]
}

func (p *Provider) key(paymentID string) string {
	return p.Prefix + ":sandbox:{" + paymentID + "}"
}

func (p *Provider) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}

// Payment is one sandbox payment as stored.
type Payment struct {
	ID          string
	OrderNo     string
	AmountCents int64
	// Currency is the order's (lower case), "" for a payment opened
	// before the sandbox kept it.
	Currency  string
	State     seckill.PaymentState
	ExpiresAt time.Time
}

// open creates the payment unless it exists, then returns it.
var open = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'order_no', ARGV[1], 'amount', ARGV[2], 'state', 'OPEN', 'expires', ARGV[3], 'currency', ARGV[5])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return redis.call('HMGET', KEYS[1], 'order_no', 'amount', 'state', 'expires', 'currency')`)

// move changes an OPEN payment's state to ARGV[1] (SUCCEEDED only before
// it expires at ARGV[2] ms) and returns the payment as it then is. A
// payment cancelled before it exists is written CANCELED for order ARGV[3]
// (kept ARGV[4] ms): the close cancelled while its checkout was being
// opened, and the payment must never be opened afterwards.
var move = goredis.NewScript(`
local p = redis.call('HMGET', KEYS[1], 'order_no', 'amount', 'state', 'expires', 'currency')
if not p[1] then
  if ARGV[1] ~= 'CANCELED' then return p end
  redis.call('HSET', KEYS[1], 'order_no', ARGV[3], 'amount', 0, 'state', 'CANCELED', 'expires', 0)
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return {ARGV[3], '0', 'CANCELED', '0', ''}
end
if p[3] == 'OPEN' and (ARGV[1] ~= 'SUCCEEDED' or tonumber(ARGV[2]) <= tonumber(p[4])) then
  redis.call('HSET', KEYS[1], 'state', ARGV[1])
  p[3] = ARGV[1]
end
return p`)

func (p *Provider) move(ctx context.Context, id, orderNo string, to seckill.PaymentState) (*Payment, error) {
	v, err := move.Run(ctx, p.Redis, []string{p.key(id)}, string(to), p.now().UnixMilli(), orderNo, keep.Milliseconds()).Result()
	return p.decode(id, v, err)
}

func (p *Provider) decode(id string, v any, err error) (*Payment, error) {
	if err != nil {
		return nil, fmt.Errorf("sandbox payments: %w", err)
	}
	f, _ := v.([]any)
	if len(f) != 5 || f[0] == nil {
		return nil, nil
	}
	amount, _ := strconv.ParseInt(fmt.Sprint(f[1]), 10, 64)
	ms, _ := strconv.ParseInt(fmt.Sprint(f[3]), 10, 64)
	currency, _ := f[4].(string)
	return &Payment{ID: id, OrderNo: fmt.Sprint(f[0]), AmountCents: amount, Currency: currency,
		State: seckill.PaymentState(fmt.Sprint(f[2])), ExpiresAt: time.UnixMilli(ms).UTC()}, nil
}

// CreatePayment opens the order's payment (once) and returns its checkout
// page; CONFLICT once the payment was cancelled (the order is closing).
func (p *Provider) CreatePayment(ctx context.Context, r seckill.CheckoutRequest) (*seckill.Checkout, error) {
	id := p.PaymentID(r.OrderNo)
	v, err := open.Run(ctx, p.Redis, []string{p.key(id)}, r.OrderNo, r.AmountCents, r.ExpiresAt.UnixMilli(), keep.Milliseconds(), r.Currency).Result()
	pay, err := p.decode(id, v, err)
	if err != nil {
		return nil, err
	}
	if pay == nil {
		return nil, errors.New("sandbox payments: payment vanished while opened")
	}
	if pay.State == seckill.PaymentCanceled {
		return nil, seckill.Errorf(seckill.ECONFLICT, "order %s: its payment was cancelled, the order is closing", r.OrderNo)
	}
	return &seckill.Checkout{Provider: Name, OrderNo: r.OrderNo, PaymentID: id,
		CheckoutURL: strings.TrimSuffix(cmp.Or(p.CheckoutBase, p.APIBase), "/") + CheckoutPath + id, ExpiresAt: pay.ExpiresAt}, nil
}

// Payment returns a payment by id; nil when there is none.
func (p *Provider) Payment(ctx context.Context, paymentID string) (*Payment, error) {
	v, err := p.Redis.HMGet(ctx, p.key(paymentID), "order_no", "amount", "state", "expires", "currency").Result()
	return p.decode(paymentID, v, err)
}

func (p *Provider) ref(ref seckill.PaymentRef) string {
	if ref.PaymentID != "" {
		return ref.PaymentID
	}
	return p.PaymentID(ref.OrderNo)
}

func answer(pay *Payment, id string) seckill.ProviderPayment {
	if pay == nil {
		return seckill.ProviderPayment{PaymentID: id, State: seckill.PaymentNone}
	}
	return seckill.ProviderPayment{PaymentID: pay.ID, State: pay.State, AmountCents: pay.AmountCents, Currency: pay.Currency}
}

// QueryPayment tells where the order's payment stands.
func (p *Provider) QueryPayment(ctx context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	id := p.ref(ref)
	pay, err := p.Payment(ctx, id)
	if err != nil {
		return seckill.ProviderPayment{}, err
	}
	return answer(pay, id), nil
}

// CancelPayment cancels an open payment, or one not opened yet (it can
// then never be opened); a paid one stays SUCCEEDED.
func (p *Provider) CancelPayment(ctx context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	id := p.ref(ref)
	pay, err := p.move(ctx, id, ref.OrderNo, seckill.PaymentCanceled)
	if err != nil {
		return seckill.ProviderPayment{}, err
	}
	return answer(pay, id), nil
}

// ErrNotPayable: the payment was cancelled, or its time ran out.
var ErrNotPayable = errors.New("this payment can no longer be paid")

// Complete pays an open payment, as the shopper does at the checkout page,
// and sends its signed webhook unless lose is set (a drill of a webhook
// the provider never delivered: the order learns of it only by asking).
// Paying a paid payment again sends the webhook again (a replay). It
// returns the status the API answered the webhook with (0 when lost).
func (p *Provider) Complete(ctx context.Context, paymentID string, lose bool) (int, error) {
	pay, err := p.move(ctx, paymentID, "", seckill.PaymentSucceeded)
	if err != nil {
		return 0, err
	}
	if pay == nil {
		return 0, fmt.Errorf("payment %s: %w", paymentID, ErrNotPayable)
	}
	if pay.State != seckill.PaymentSucceeded {
		return 0, fmt.Errorf("payment %s is %s: %w", paymentID, strings.ToLower(string(pay.State)), ErrNotPayable)
	}
	if lose {
		return 0, nil
	}
	return p.Pay(ctx, seckill.Payment{PaymentID: pay.ID, OrderNo: pay.OrderNo, AmountCents: pay.AmountCents, Currency: pay.Currency})
}

// refundsKey is the hash of the refunds made: payment id → the refund as
// JSON. In Redis like the payments, so a refund a worker process made is
// seen by the test or the drill that checks it.
func (p *Provider) refundsKey() string { return p.Prefix + ":sandbox:refunds" }

// Refund records a refund once per payment (a second call is the same
// refund, as a provider's idempotency key makes it) and returns its id.
func (p *Provider) Refund(ctx context.Context, r seckill.Refund) (string, error) {
	id := "re_" + r.PaymentID
	if p.Redis == nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.refunds == nil {
			p.refunds = map[string]seckill.Refund{}
		}
		if _, ok := p.refunds[r.PaymentID]; !ok {
			p.refunds[r.PaymentID] = r
		}
		return id, nil
	}
	v, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	pipe := p.Redis.TxPipeline()
	pipe.HSetNX(ctx, p.refundsKey(), r.PaymentID, v)
	pipe.PExpire(ctx, p.refundsKey(), keep)
	if _, err := pipe.Exec(ctx); err != nil {
		return "", fmt.Errorf("sandbox refunds: %w", err)
	}
	return id, nil
}

// Refunds returns the refunds made, by payment id, for tests and drills to
// check. It panics when Redis cannot be read: an empty answer would pass
// a check that nothing was refunded.
func (p *Provider) Refunds() map[string]seckill.Refund {
	if p.Redis == nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		out := make(map[string]seckill.Refund, len(p.refunds))
		for k, v := range p.refunds {
			out[k] = v
		}
		return out
	}
	raw, err := p.Redis.HGetAll(context.Background(), p.refundsKey()).Result()
	if err != nil {
		panic(fmt.Sprintf("sandbox refunds: %v", err))
	}
	out := make(map[string]seckill.Refund, len(raw))
	for k, v := range raw {
		var r seckill.Refund
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			panic(fmt.Sprintf("sandbox refund %s: %v", k, err))
		}
		out[k] = r
	}
	return out
}

// Pay sends the signed SUCCEEDED webhook of a payment and returns the
// API's status code; an error only when the API could not be reached.
func (p *Provider) Pay(ctx context.Context, pay seckill.Payment) (int, error) {
	c := &client.Client{BaseURL: p.APIBase, HTTP: p.Client, WebhookSecret: p.Secret}
	m, err := c.Pay(ctx, pay)
	if code := client.StatusCode(err); code != 0 {
		return code, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sandbox webhook: %w", err)
	}
	return m.StatusCode, nil
}
