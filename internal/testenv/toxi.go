package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Faults as they really come: a Toxi is a toxiproxy proxy, run in process,
// between the code under test and one real service (Redis, MySQL, the
// Temporal frontend). A drill adds toxics to it while traffic flows:
// latency above the client's timeouts, connections that stall, resets,
// a service that is gone. Toxics apply to open connections too, exactly as
// a network that turns bad under a live connection pool.
type Toxi struct {
	// Addr is where the code under test connects instead of the service.
	Addr string

	t     testing.TB
	proxy *toxiproxy.Proxy
	mu    sync.Mutex
	seq   int
}

// toxiServer is the one in-process toxiproxy "API server" every proxy of a
// test binary hangs off (the library wants one for logging and metrics).
var toxiServer = sync.OnceValue(func() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
})

// Stream directions of a toxic: Downstream is what the service sends back
// (replies), Upstream what the client sends (requests).
const (
	Downstream = "downstream"
	Upstream   = "upstream"
)

// StartToxi listens on a free loopback port and forwards to upstream
// (host:port) until the test ends.
func StartToxi(t testing.TB, name, upstream string) *Toxi {
	t.Helper()
	p := toxiproxy.NewProxy(toxiServer(), name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("toxiproxy %s → %s: %v", name, upstream, err)
	}
	t.Cleanup(p.Stop)
	return &Toxi{Addr: p.Listen, t: t, proxy: p}
}

// Add adds a toxic of the given toxiproxy type ("latency", "timeout",
// "reset_peer", "bandwidth", "slow_close", "limit_data", "slicer") on one
// stream and returns a function that removes it. attrs are the toxic's
// attributes as toxiproxy documents them (milliseconds for times).
func (x *Toxi) Add(typ, stream string, attrs map[string]any) (remove func()) {
	x.t.Helper()
	x.mu.Lock()
	x.seq++
	name := fmt.Sprintf("%s_%s_%d", typ, stream, x.seq)
	x.mu.Unlock()
	body, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		x.t.Fatal(err)
	}
	if _, err := x.proxy.Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
		x.t.Fatalf("toxiproxy: add %s: %v", name, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() { _ = x.proxy.Toxics.RemoveToxic(context.Background(), name) })
	}
}

// Latency delays every reply (downstream) by d ± jitter: a slow service,
// not a dead one. Set it above the client's read timeout to get timeouts
// whose outcome the client cannot know.
func (x *Toxi) Latency(d, jitter time.Duration) (remove func()) {
	return x.Add("latency", Downstream, map[string]any{"latency": d.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Stall lets requests through but holds every reply for good (toxiproxy's
// "timeout" toxic with no timeout): the service did the work and never
// answers.
func (x *Toxi) Stall() (remove func()) {
	return x.Add("timeout", Downstream, map[string]any{"timeout": 0})
}

// ResetPeer resets (TCP RST) every connection after it has sent its next
// request, after delay: a load balancer or a crashed peer cutting
// connections mid-request.
func (x *Toxi) ResetPeer(delay time.Duration) (remove func()) {
	return x.Add("reset_peer", Upstream, map[string]any{"timeout": delay.Milliseconds()})
}

// SetDown takes the service away (true: the listener closes and every
// open connection is severed) or brings it back (false) on the same address.
func (x *Toxi) SetDown(down bool) {
	x.t.Helper()
	if down {
		x.proxy.Stop()
		return
	}
	if err := x.proxy.Start(); err != nil && err != toxiproxy.ErrProxyAlreadyStarted {
		x.t.Fatalf("toxiproxy: restart %s: %v", x.proxy.Name, err)
	}
}

// Clear removes every toxic.
func (x *Toxi) Clear() { x.proxy.Toxics.ResetToxics(context.Background()) }
