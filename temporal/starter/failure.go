package starter

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
)

// Failure kinds of seckill_workflow_start_failures_total.
const (
	KindTimeout     = "timeout"     // the call's deadline passed
	KindOverloaded  = "overloaded"  // ResourceExhausted: the server sheds load
	KindUnavailable = "unavailable" // Unavailable: the frontend is not reachable
	KindOther       = "other"
)

// FailureKinds lists every kind.
var FailureKinds = []string{KindTimeout, KindOverloaded, KindUnavailable, KindOther}

// Kind classifies a start error; the first three say "slow down".
func Kind(err error) string {
	var re *serviceerror.ResourceExhausted
	var un *serviceerror.Unavailable
	var de *serviceerror.DeadlineExceeded
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &de):
		return KindTimeout
	case errors.As(err, &re):
		return KindOverloaded
	case errors.As(err, &un):
		return KindUnavailable
	}
	return KindOther
}
