package tracing

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// Transport is rt (http.DefaultTransport when nil) with a client span
// around each request and the trace context in its headers (otelhttp),
// when tracing is on; rt itself otherwise.
func Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	if !Enabled() {
		return rt
	}
	return otelhttp.NewTransport(rt)
}
