package seckill

import (
	"errors"
	"fmt"
)

// Error codes: the one vocabulary of failures. The api maps each to an HTTP
// status once; activities map them to non-retryable Temporal error types.
const (
	EINVALID      = "INVALID_ARGUMENT"
	EUNAUTHORIZED = "UNAUTHENTICATED"
	EFORBIDDEN    = "FORBIDDEN"
	// ENOTELIGIBLE: a reserved sale, and the shopper did not register.
	ENOTELIGIBLE = "NOT_ELIGIBLE"
	ENOTFOUND    = "NOT_FOUND"
	ESOLDOUT     = "SOLD_OUT"
	ELIMIT       = "LIMIT_EXCEEDED"
	EENDED       = "ENDED"
	EPAUSED      = "PAUSED"
	ENOTSTARTED  = "NOT_STARTED"
	ERATELIMITED = "RATE_LIMITED"
	EUNAVAILABLE = "UNAVAILABLE"
	ECONFLICT    = "CONFLICT"
	EAMOUNT      = "AMOUNT_MISMATCH"
	EIDEMPOTENCY = "IDEMPOTENCY_MISMATCH"
	// EOUTOFRANGE: well-formed values the operation cannot take, such as
	// a sale window that ends before it starts, or in the past.
	EOUTOFRANGE = "OUT_OF_RANGE"
	ETOOLARGE   = "PAYLOAD_TOO_LARGE"
	EINTERNAL   = "INTERNAL"
)

// Error is an application error with a code from the list above and a
// message safe to show to the caller.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL
// for any other non-nil error and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	default:
		return EINTERNAL
	}
}

// ErrorMessage returns the caller-safe message of err: the message of its
// *Error, or a generic text so that internal details never leak.
func ErrorMessage(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Message
	default:
		return "internal error"
	}
}

// ErrorBody is the shape of every error response of the HTTP API:
// {"code", "message", "trace_id"}. The api writes it, the Go client reads it.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	TraceID string `json:"trace_id"`
}
