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
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case connectionLost(err), errors.Is(err, goredis.ErrPoolTimeout):
		return true
	}
	return notNow(err)
}

// connectionLost tells the failures of the connection itself (timeouts,
// refused or dropped connections) from anything Redis answered.
func connectionLost(err error) bool {
	var ne net.Error
	var lost *replyLost
	return errors.As(err, &ne) || errors.As(err, &lost) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// notNow tells Redis's answers that mean "not now, ask again" (a loading
// or failing-over server, a busy script, a cluster without a master for
// the slot yet, a demoted master): the command did not run.
func notNow(err error) bool {
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
