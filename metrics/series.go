package metrics

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Series caches the children of the HTTP series the API touches on every
// request: resolving labels through the vectors hashes them and, for byte
// slices, copies them, which the sold-out path would pay on every answer.
type Series struct {
	m  *Metrics
	mu sync.RWMutex
	// requests by route+method+status, durations by route, admissions by
	// layer+outcome.
	requests   map[[3]string]prometheus.Counter
	durations  map[string]*latency
	admissions map[string]prometheus.Counter
}

// NewSeries is an empty cache of m's HTTP series.
func NewSeries(m *Metrics) *Series {
	return &Series{m: m, requests: map[[3]string]prometheus.Counter{},
		durations: map[string]*latency{}, admissions: map[string]prometheus.Counter{}}
}

// exemplarEvery is how often a route's latency carries an exemplar, the
// trace id of one request in its bucket (a link from a slow bucket to that
// request's logs and trace). Prometheus keeps one exemplar per bucket and
// scrape, and each costs an allocation: one per route this often is what a
// scrape could keep anyway, never one per request of a sale.
const exemplarEvery = 100 * time.Millisecond

// latency is a route's histogram child and when it last took an exemplar
// (unix nanoseconds).
type latency struct {
	obs  prometheus.Observer
	last atomic.Int64
}

func (l *latency) observe(d time.Duration, traceID string) {
	now := time.Now().UnixNano()
	last := l.last.Load()
	if ex, ok := l.obs.(prometheus.ExemplarObserver); ok && traceID != "" &&
		now-last >= int64(exemplarEvery) && l.last.CompareAndSwap(last, now) {
		ex.ObserveWithExemplar(d.Seconds(), prometheus.Labels{"trace_id": traceID})
		return
	}
	l.obs.Observe(d.Seconds())
}

// Answer records one HTTP answer: by route pattern (never the raw path,
// which would explode the label set), method and status, and its handling
// time by route, with traceID (the request's) as an exemplar now and then.
func (s *Series) Answer(route, method string, status int, d time.Duration, traceID string) {
	s.request(route, methodLabel(method), statusLabel(status)).Inc()
	s.duration(route).observe(d, traceID)
}

// Admission records an admission's answer by the layer that decided it
// and the outcome: accepted (202), else the error code of its body. It is
// the funnel ops watch.
func (s *Series) Admission(layer []byte, status int, body []byte) {
	outcome := []byte("accepted")
	if status != http.StatusAccepted {
		outcome = admissionOutcome(body)
	}
	s.admission(layer, outcome).Inc()
}

func (s *Series) request(route, method, status string) prometheus.Counter {
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

func (s *Series) duration(route string) *latency {
	s.mu.RLock()
	o, ok := s.durations[route]
	s.mu.RUnlock()
	if !ok {
		o = &latency{obs: s.m.HTTPDuration.WithLabelValues(route)}
		s.mu.Lock()
		s.durations[route] = o
		s.mu.Unlock()
	}
	return o
}

// admission looks the pair up by bytes (no copy on a hit: Go does not
// allocate for a map index with a string(bytes) conversion).
func (s *Series) admission(layer, outcome []byte) prometheus.Counter {
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

// methodLabel maps the request method to a constant: the API's strings
// (fasthttp's) point into buffers it reuses, so they must never be kept as
// labels.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet:
		return "GET"
	case http.MethodPost:
		return "POST"
	case http.MethodPut:
		return "PUT"
	case http.MethodDelete:
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
