package redis

import (
	"context"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Captchas holds the answers of the captchas handed out, each for its ttl
// and for one check: any API process verifies a captcha another issued.
// One key per captcha (no hash tag needed: each is used alone).
type Captchas struct {
	rdb    goredis.UniversalClient
	prefix string
}

// NewCaptchas returns the captcha store of the keys under prefix.
func NewCaptchas(rdb goredis.UniversalClient, prefix string) *Captchas {
	return &Captchas{rdb: rdb, prefix: prefix + ":captcha:"}
}

// Put stores a captcha's record (who may answer it and the answer) for
// ttl. A SET, idempotent: retried.
func (c *Captchas) Put(ctx context.Context, id, record string, ttl time.Duration) error {
	if err := retry(ctx, func(ctx context.Context) error { return c.rdb.Set(ctx, c.prefix+id, record, ttl).Err() }); err != nil {
		return unavailable(err)
	}
	return nil
}

// Peek returns a captcha's record without using it up (its audio is
// rendered from it); ok is false when it expired or was used.
func (c *Captchas) Peek(ctx context.Context, id string) (string, bool, error) {
	v, err := idempotent(ctx, func(ctx context.Context) (string, error) { return c.rdb.Get(ctx, c.prefix+id).Result() })
	return found(v, err)
}

// Take returns a captcha's record and deletes it in the same step: a
// captcha is checked once, right or wrong. Never retried: a GETDEL whose
// reply was lost has used the captcha up; the shopper fetches a new one.
func (c *Captchas) Take(ctx context.Context, id string) (string, bool, error) {
	return found(c.rdb.GetDel(ctx, c.prefix+id).Result())
}

func found(v string, err error) (string, bool, error) {
	switch {
	case errors.Is(err, goredis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, unavailable(err)
	}
	return v, true, nil
}
