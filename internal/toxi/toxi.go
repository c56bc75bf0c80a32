// Package toxi puts toxiproxy (as a library, in process) between seckill
// and one of the services it uses (Redis, MySQL, the Temporal frontend), so
// faults come as they really do: replies later than the client's timeout,
// connections that stall or are reset mid-request, a service that is gone.
// The drills' test environment and `seckill-lab chaos` both inject through it;
// only loopback addresses are ever listened on.
package toxi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Stream directions of a toxic: Downstream is what the service sends back
// (replies), Upstream what the client sends (requests).
const (
	Downstream = "downstream"
	Upstream   = "upstream"
)

// Link is one toxiproxy proxy: the code under test connects to Addr
// instead of the service. Toxics apply to open connections too, exactly as
// a network that turns bad under a live connection pool.
type Link struct {
	// Addr is where the code connects instead of the service (loopback).
	Addr     string
	Name     string
	Upstream string

	proxy *toxiproxy.Proxy
	mu    sync.Mutex
	seq   int
}

// server is the one in-process toxiproxy "API server" every proxy of a
// process hangs off (the library wants one for logging and metrics; its
// HTTP API is never started).
var server = sync.OnceValue(func() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
})

// Start listens on a free loopback port and forwards to upstream
// (host:port) until Close.
func Start(name, upstream string) (*Link, error) {
	p := toxiproxy.NewProxy(server(), name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("toxiproxy %s → %s: %w", name, upstream, err)
	}
	return &Link{Addr: p.Listen, Name: name, Upstream: upstream, proxy: p}, nil
}

// Add adds a toxic of the given toxiproxy type ("latency", "timeout",
// "reset_peer", "bandwidth", "slow_close", "limit_data", "slicer") on one
// stream and returns a function that removes it. attrs are the toxic's
// attributes as toxiproxy documents them (milliseconds for times).
func (l *Link) Add(typ, stream string, attrs map[string]any) (remove func(), err error) {
	l.mu.Lock()
	l.seq++
	name := fmt.Sprintf("%s_%s_%d", typ, stream, l.seq)
	l.mu.Unlock()
	body, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		return nil, err
	}
	if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
		return nil, fmt.Errorf("toxiproxy %s: add %s: %w", l.Name, name, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() { _ = l.proxy.Toxics.RemoveToxic(context.Background(), name) })
	}, nil
}

// Latency delays every reply (downstream) by d ± jitter: a slow service,
// not a dead one. Set it above the client's read timeout to get timeouts
// whose outcome the client cannot know; on MySQL it makes every statement
// take seconds.
func (l *Link) Latency(d, jitter time.Duration) (remove func(), err error) {
	return l.Add("latency", Downstream, map[string]any{"latency": d.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Stall lets requests through but drops every reply until removed
// (toxiproxy's "timeout" toxic with no timeout): the service did the work
// and never answers; only the client's own timeout ends the wait.
func (l *Link) Stall() (remove func(), err error) {
	return l.Add("timeout", Downstream, map[string]any{"timeout": 0})
}

// ResetPeer resets (TCP RST) every connection delay after it sends data: a
// load balancer or a crashed peer cutting connections mid-request.
func (l *Link) ResetPeer(delay time.Duration) (remove func(), err error) {
	return l.Add("reset_peer", Upstream, map[string]any{"timeout": delay.Milliseconds()})
}

// SetDown takes the service away (true: the listener closes and every open
// connection is severed) or brings it back (false) on the same address.
func (l *Link) SetDown(down bool) error {
	if down {
		l.proxy.Stop()
		return nil
	}
	if err := l.proxy.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		return fmt.Errorf("toxiproxy %s: restart: %w", l.Name, err)
	}
	return nil
}

// Clear removes every toxic (the link stays up or down as it is).
func (l *Link) Clear() { l.proxy.Toxics.ResetToxics(context.Background()) }

// Close stops the proxy for good.
func (l *Link) Close() { l.proxy.Stop() }
