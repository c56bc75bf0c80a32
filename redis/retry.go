package redis

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// NewClient returns a go-redis client that never re-sends a command by
// itself (MaxRetries -1, whatever o says). go-redis retries a command after
// a read timeout by default: for a script that changed something, the
// second run then answers about a world the first run already changed (the
// first reserved, the second says LIMIT_EXCEEDED). Which commands are
// retried, and how, is decided here per command instead (see retry and the
// table in the package comment). Every process (api, worker, dev, the
// tests) builds its client through this.
func NewClient(o *goredis.Options) *goredis.Client {
	opts := *o
	opts.MaxRetries = -1
	return goredis.NewClient(&opts)
}

// NewAdmissionClient is the client of a process that admits shoppers (the
// API, and the bench's admission-only baseline, which must cost what the
// API does): admission is one short script per request, so many
// connections and small timeouts.
func NewAdmissionClient(addr string) *goredis.Client {
	return NewClient(&goredis.Options{
		Addr:         addr,
		PoolSize:     256,
		MinIdleConns: 16,
		ReadTimeout:  500 * time.Millisecond,
		WriteTimeout: 500 * time.Millisecond,
	})
}

// Retry budget of the idempotent commands: a blip (a reply slower than the
// read timeout, a reset connection, a failover) is ridden out; a Redis that
// stays away is reported as UNAVAILABLE well before a shopper gives up.
const (
	retryAttempts = 4
	retryFirst    = 25 * time.Millisecond
	retryMax      = 250 * time.Millisecond
)

// retry runs op, and runs it again after a failure that may be transient,
// up to retryAttempts times while ctx lasts. Only for operations that are
// idempotent as a whole: op may have taken effect before its reply was
// lost, and runs again anyway.
func retry(ctx context.Context, op func(context.Context) error) error {
	wait := retryFirst
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil || attempt == retryAttempts || !retryable(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}

// retryable tells the failures whose outcome is unknown or that Redis asks
// to retry (timeouts, dropped connections, a loading or failing-over
// server, a busy script) from answers (a script error, a wrong type).
func retryable(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, goredis.ErrPoolTimeout):
		return true
	}
	for _, p := range []string{"LOADING ", "BUSY ", "TRYAGAIN ", "CLUSTERDOWN ", "MASTERDOWN ", "READONLY "} {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}

// idempotent runs f, an idempotent command, with retry and returns its value.
func idempotent[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	var v T
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		v, err = f(ctx)
		return err
	})
	return v, err
}
