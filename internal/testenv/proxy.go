package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of a real service that a drill can cut:
// while down, it refuses new connections and severs the open ones, as a
// network partition or a crashed server would.
type Proxy struct {
	Addr   string
	target string
	ln     net.Listener

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	// refused counts connections turned away while down.
	refused int
}

// Refused returns how many connections were turned away while down: a
// drill checks it to prove the outage was felt.
func (p *Proxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// StartProxy listens on a free loopback port and forwards to target.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.SetDown(true) })
	return p
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.refused++
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		go p.forward(c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// SetDown cuts (true) or restores (false) the proxied service.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			c.Close()
		}
	}
}
