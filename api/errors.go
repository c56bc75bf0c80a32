package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/tracing"
)

// statusOf is the one mapping from error codes to HTTP statuses.
var statusOf = map[string]int{
	seckill.EINVALID:      http.StatusBadRequest,
	seckill.EUNAUTHORIZED: http.StatusUnauthorized,
	seckill.EFORBIDDEN:    http.StatusForbidden,
	seckill.ENOTFOUND:     http.StatusNotFound,
	seckill.ESOLDOUT:      http.StatusConflict,
	seckill.ELIMIT:        http.StatusConflict,
	seckill.ENOTELIGIBLE:  http.StatusForbidden,
	seckill.ECONFLICT:     http.StatusConflict,
	seckill.EENDED:        http.StatusGone,
	seckill.EPAUSED:       http.StatusLocked,
	seckill.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	seckill.EAMOUNT:       http.StatusUnprocessableEntity,
	seckill.EIDEMPOTENCY:  http.StatusUnprocessableEntity,
	seckill.EOUTOFRANGE:   http.StatusUnprocessableEntity,
	seckill.ENOTSTARTED:   http.StatusTooEarly,
	seckill.ERATELIMITED:  http.StatusTooManyRequests,
	seckill.EUNAVAILABLE:  http.StatusServiceUnavailable,
	seckill.EINTERNAL:     http.StatusInternalServerError,
}

// HeaderLayer names, on every admission answer, the layer that decided it,
// so a load test can draw the funnel: which defence turned how many away.
const HeaderLayer = "X-Seckill-Layer"

// The layers the front door decides in itself; the others are
// admission's (admission.LayerBlocklist, LayerWindow, LayerRateLimit,
// LayerRisk, LayerRedis, and the sold-out memory, which the front door
// asks first for a sold-out sale and admission for a sold-out item). In
// the order an attempt meets them: global limit, sold-out memory, auth,
// blocklist, input, window, rate limit, risk, ticket, redis.
const (
	LayerGlobalLimit   = "global_limit"
	LayerSoldOutMemory = admission.LayerSoldOutMemory
	LayerAuth          = "auth"
	LayerInput         = "input"
	LayerTicket        = "ticket"
)

// ErrorBody is the shape of every error response (seckill.ErrorBody, which
// the Go client decodes too).
type ErrorBody = seckill.ErrorBody

// errorHandler writes err as an ErrorBody. Fiber's own errors (body too
// large, malformed request line) are translated into the vocabulary first;
// anything unknown is a 500 whose details go to the log, not the client.
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	var fe *fiber.Error
	// Nearly every error here is the vocabulary's own, unwrapped (SOLD_OUT
	// for the losers of a sale): a type assertion answers it without the
	// reflection of errors.As.
	direct, isDirect := err.(*seckill.Error)
	if !isDirect && errors.As(err, &fe) {
		switch fe.Code {
		case http.StatusRequestEntityTooLarge:
			err = seckill.Errorf(seckill.ETOOLARGE, "request body is larger than %d bytes", s.bodyLimitOf(&c.Request().Header))
		case http.StatusRequestHeaderFieldsTooLarge:
			err = seckill.Errorf(seckill.EINVALID, "request line and headers are larger than %d bytes", headerLimit)
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			err = seckill.Errorf(seckill.ENOTFOUND, "no route %s %s", c.Method(), c.Path())
		case http.StatusBadRequest:
			err = seckill.Errorf(seckill.EINVALID, "%s", fe.Message)
		default:
			if fe.Code < 500 {
				err = seckill.Errorf(seckill.EINVALID, "%s", fe.Message)
			}
		}
	}
	var code, message string
	if isDirect {
		code, message = direct.Code, direct.Message
	} else {
		code, message = seckill.ErrorCode(err), seckill.ErrorMessage(err)
	}
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	trace := traceID(c)
	if trace == "" {
		// Fasthttp refused the request (e.g. body too large) before the
		// request-id middleware ran.
		trace = tracing.NewSpanContext().TraceID().String()
		c.Set(tracing.HeaderRequestID, trace)
	}
	if status >= 500 {
		s.log.Error("request failed", "trace_id", trace, "method", c.Method(), "path", c.Path(),
			"client_ip", s.clientIP(c).String(), "code", code, "error", err)
	}
	if len(c.Response().Header.Peek(HeaderLayer)) == 0 {
		switch code {
		case seckill.EUNAUTHORIZED:
			c.Set(HeaderLayer, LayerAuth)
		case seckill.EINVALID, seckill.ETOOLARGE:
			c.Set(HeaderLayer, LayerInput)
		case seckill.EFORBIDDEN:
			c.Set(HeaderLayer, LayerTicket)
		}
	}
	// Both mean "come back shortly": a rate limit, or a dependency (Redis,
	// MySQL, Temporal) that is away; an UNAVAILABLE purchase may have an
	// outcome that the retry with the same Idempotency-Key learns.
	if (code == seckill.ERATELIMITED || code == seckill.EUNAVAILABLE) && len(c.Response().Header.Peek(fiber.HeaderRetryAfter)) == 0 {
		c.Set(fiber.HeaderRetryAfter, "1")
	}
	buf := errorBufs.Get().(*[]byte)
	*buf = appendErrorJSON((*buf)[:0], ErrorBody{Code: code, Message: message, TraceID: trace})
	c.Status(status).Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	// SetBody copies into the response. (Fiber's Send keeps the slice
	// itself, which would then be recycled under a response still being
	// written: one shopper's error body showing another's.)
	c.Response().SetBody(*buf)
	errorBufs.Put(buf)
	return nil
}

// errorBufs recycles the encoding buffers of error bodies.
var errorBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendErrorJSON appends b as JSON, byte for byte what encoding/json writes,
// without reflection for the plain strings nearly every body holds: every
// loser of a sale gets an error body, and encoding it through reflection
// was the largest cost of the sold-out answer after the socket.
func appendErrorJSON(dst []byte, b ErrorBody) []byte {
	dst = append(dst, `{"code":`...)
	dst = appendJSONString(dst, b.Code)
	dst = append(dst, `,"message":`...)
	dst = appendJSONString(dst, b.Message)
	dst = append(dst, `,"trace_id":`...)
	dst = appendJSONString(dst, b.TraceID)
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string the way encoding/json does:
// as it is when no byte needs an escape (encoding/json's HTML-safe set),
// else through encoding/json itself.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s)
			return append(dst, quoted...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
