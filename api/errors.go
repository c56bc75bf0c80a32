package api

import (
	"errors"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// statusOf is the one mapping from error codes to HTTP statuses.
var statusOf = map[string]int{
	seckill.EINVALID:      http.StatusBadRequest,
	seckill.EUNAUTHORIZED: http.StatusUnauthorized,
	seckill.EFORBIDDEN:    http.StatusForbidden,
	seckill.ENOTFOUND:     http.StatusNotFound,
	seckill.ESOLDOUT:      http.StatusConflict,
	seckill.ELIMIT:        http.StatusConflict,
	seckill.ECONFLICT:     http.StatusConflict,
	seckill.EENDED:        http.StatusGone,
	seckill.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	seckill.EAMOUNT:       http.StatusUnprocessableEntity,
	seckill.EIDEMPOTENCY:  http.StatusUnprocessableEntity,
	seckill.ENOTSTARTED:   http.StatusTooEarly,
	seckill.ERATELIMITED:  http.StatusTooManyRequests,
	seckill.EUNAVAILABLE:  http.StatusServiceUnavailable,
	seckill.EINTERNAL:     http.StatusInternalServerError,
}

// HeaderLayer names, on every admission answer, the layer that decided it,
// so a load test can draw the funnel: which defence turned how many away.
const HeaderLayer = "X-Seckill-Layer"

// Admission layers, cheapest first.
const (
	LayerGlobalLimit   = "global_limit"
	LayerSoldOutMemory = "soldout_memory"
	LayerAuth          = "auth"
	LayerBlocklist     = "blocklist"
	LayerInput         = "input"
	LayerWindow        = "window"
	LayerRateLimit     = "rate_limit"
	LayerTicket        = "ticket"
	LayerRedis         = "redis" // the admission script: accepted, SOLD_OUT or LIMIT_EXCEEDED
)

// ErrorBody is the shape of every error response.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	TraceID string `json:"trace_id"`
}

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
			err = seckill.Errorf(seckill.ETOOLARGE, "request body is larger than %d bytes", bodyLimit)
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
		trace = newTraceID()
		c.Set(headerRequestID, trace)
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
	*buf = ErrorBody{Code: code, Message: message, TraceID: trace}.AppendJSON((*buf)[:0])
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

// AppendJSON appends b as JSON, byte for byte what encoding/json writes
// (HTML-safe escapes, invalid UTF-8 as U+FFFD), without reflection: every
// loser of a sale gets an error body, and encoding it through reflection
// was the largest cost of the sold-out answer after the socket.
func (b ErrorBody) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"code":`...)
	dst = appendJSONString(dst, b.Code)
	dst = append(dst, `,"message":`...)
	dst = appendJSONString(dst, b.Message)
	dst = append(dst, `,"trace_id":`...)
	dst = appendJSONString(dst, b.TraceID)
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string the way encoding/json does.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other control characters, and <, >, & for HTML safety
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 end lines in JavaScript: escaped, as encoding/json does.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
