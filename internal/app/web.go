package app

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/seckill/seckill/temporal"
)

// Web is what the API answers browsers and links to: the origins whose
// pages may call the shopper routes, and Temporal's Web UI.
type Web struct {
	// CORSOrigins are the origins (scheme://host[:port], comma-separated)
	// of shops on their own origin; empty: same origin only.
	CORSOrigins string `env:"SECKILL_CORS_ORIGINS"`
	// TemporalUIURL is Temporal's Web UI (e.g. http://127.0.0.1:8233): an
	// order's admin record links to its workflow there; unset: no link.
	TemporalUIURL string `env:"SECKILL_TEMPORAL_UI_URL"`
}

// origins is SECKILL_CORS_ORIGINS parsed: each an absolute http(s) origin
// with no path, lower-cased as browsers send it.
func (w Web) origins() ([]string, error) {
	var out []string
	for _, raw := range strings.Split(w.CORSOrigins, ",") {
		o := strings.ToLower(strings.TrimSpace(raw))
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("SECKILL_CORS_ORIGINS: %q is not an origin such as https://shop.example.com", raw)
		}
		out = append(out, o)
	}
	return out, nil
}

// checkWeb validates SECKILL_CORS_ORIGINS and SECKILL_TEMPORAL_UI_URL.
func (w Web) checkWeb() error {
	if _, err := w.origins(); err != nil {
		return err
	}
	if w.TemporalUIURL != "" && !absoluteHTTP(w.TemporalUIURL) {
		return fmt.Errorf("SECKILL_TEMPORAL_UI_URL=%q must be an absolute http(s) URL", w.TemporalUIURL)
	}
	return nil
}

// workflowLink is the address of an order's workflow in the Web UI of
// namespace; nil without SECKILL_TEMPORAL_UI_URL.
func (w Web) workflowLink(namespace string) func(string) string {
	if w.TemporalUIURL == "" {
		return nil
	}
	base := strings.TrimRight(w.TemporalUIURL, "/")
	return func(orderNo string) string {
		return base + "/namespaces/" + url.PathEscape(namespace) + "/workflows/" + url.PathEscape(temporal.WorkflowID(orderNo))
	}
}
