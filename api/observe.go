package api

import (
	"bytes"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/metrics"
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
	s.series.request(route, methodLabel(c.Method()), statusLabel(status)).Inc()
	s.series.duration(route).Observe(time.Since(start).Seconds())
	if layer := c.Response().Header.Peek(HeaderLayer); len(layer) > 0 {
		outcome := []byte("accepted")
		if status != fiber.StatusAccepted {
			outcome = admissionOutcome(c.Response().Body())
		}
		s.series.admission(layer, outcome).Inc()
	}
	return nil
}

// series caches the metric children the API touches on every request:
// resolving labels through the vectors hashes them and, for byte slices,
// copies them, which the sold-out path would pay on every answer.
type series struct {
	m  *metrics.Metrics
	mu sync.RWMutex
	// requests by route+method+status, durations by route, admissions by
	// layer+outcome.
	requests   map[[3]string]prometheus.Counter
	durations  map[string]prometheus.Observer
	admissions map[string]prometheus.Counter
}

func newSeries(m *metrics.Metrics) *series {
	return &series{m: m, requests: map[[3]string]prometheus.Counter{},
		durations: map[string]prometheus.Observer{}, admissions: map[string]prometheus.Counter{}}
}

func (s *series) request(route, method, status string) prometheus.Counter {
	k := [3]string{route, method, status}
	s.mu.RLock()
	c, ok := s.requests[k]
	s.mu.RUnlock()
	if !ok {
		c = s.m.HTTPRequests.WithLabelValues(route, method, status)
		s.mu.Lock()
		s.requests[k] = c
		s.mu.Unlock()
	}
	return c
}

func (s *series) duration(route string) prometheus.Observer {
	s.mu.RLock()
	o, ok := s.durations[route]
	s.mu.RUnlock()
	if !ok {
		o = s.m.HTTPDuration.WithLabelValues(route)
		s.mu.Lock()
		s.durations[route] = o
		s.mu.Unlock()
	}
	return o
}

// admission looks the pair up by bytes (no copy on a hit: Go does not
// allocate for a map index with a string(bytes) conversion).
func (s *series) admission(layer, outcome []byte) prometheus.Counter {
	var buf [64]byte
	key := append(append(append(buf[:0], layer...), '|'), outcome...)
	s.mu.RLock()
	c, ok := s.admissions[string(key)]
	s.mu.RUnlock()
	if !ok {
		c = s.m.Admissions.WithLabelValues(string(layer), string(outcome))
		s.mu.Lock()
		s.admissions[string(key)] = c
		s.mu.Unlock()
	}
	return c
}

// admissionOutcome reads the error code of a refused admission from its
// body ({"code":"SOLD_OUT",...}) without decoding the JSON or copying.
func admissionOutcome(body []byte) []byte {
	key := []byte(`"code":"`)
	if i := bytes.Index(body, key); i >= 0 {
		rest := body[i+len(key):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 {
			return rest[:j]
		}
	}
	return []byte("error")
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
