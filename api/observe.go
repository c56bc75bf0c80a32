package api

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
)

// observe records every answer in the metrics: by route pattern (never the
// raw path, which would explode the label set), and for admissions by the
// layer that decided and the outcome, which is the funnel ops watch.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		// Let the error handler write the answer first, so the status and
		// the layer header are final.
		if herr := s.errorHandler(c, err); herr != nil {
			return herr
		}
	}
	route := c.Route().Path
	if route == "/" && c.Path() != "/" {
		route = "unmatched"
	}
	status := c.Response().StatusCode()
	m := s.cfg.Metrics
	m.HTTPRequests.WithLabelValues(route, methodLabel(c.Method()), statusLabel(status)).Inc()
	m.HTTPDuration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	if layer := c.Response().Header.Peek(HeaderLayer); len(layer) > 0 {
		outcome := "accepted"
		if status != fiber.StatusAccepted {
			outcome = admissionOutcome(c.Response().Body())
		}
		m.Admissions.WithLabelValues(string(layer), outcome).Inc()
	}
	return nil
}

// admissionOutcome reads the error code of a refused admission from its
// body ({"code":"SOLD_OUT",...}) without decoding the whole JSON.
func admissionOutcome(body []byte) string {
	const key = `"code":"`
	for i := 0; i+len(key) < len(body); i++ {
		if string(body[i:i+len(key)]) == key {
			rest := body[i+len(key):]
			for j, b := range rest {
				if b == '"' {
					return string(rest[:j])
				}
			}
		}
	}
	return "error"
}

// methodLabel maps the request method to a constant: fasthttp's strings
// point into buffers it reuses, so they must never be kept as labels.
func methodLabel(m string) string {
	switch m {
	case fiber.MethodGet:
		return "GET"
	case fiber.MethodPost:
		return "POST"
	case fiber.MethodPut:
		return "PUT"
	case fiber.MethodDelete:
		return "DELETE"
	default:
		return "OTHER"
	}
}

// statusLabels holds the label of every HTTP status, so the hot path does
// not format one per request.
var statusLabels = func() (out [600]string) {
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

func statusLabel(code int) string {
	if code >= 0 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return strconv.Itoa(code)
}
