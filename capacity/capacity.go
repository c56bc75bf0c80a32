// Package capacity measures what seckill costs the servers behind it per
// admission and per order: Redis commands and network bytes, MySQL
// transactions and rows, Temporal persistence requests. It reads each
// server's own counters before and after a phase of a small sale
// (a Meter over Sources), so the figures are counts, repeatable on a noisy
// machine where timings are not. Run sells the sale, with the API and the
// worker in process, on servers of its own (`seckill-lab capacity`,
// scripts/capacity.sh); docs/CAPACITY.md sizes a sale from its report.
// The counters are server-wide: each Source must read a server (Redis), a
// user (MySQL) or a namespace nobody else uses while the measurement runs.
package capacity

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"
)

// Counts are counter values by name (e.g. "cmd:evalsha", "rows_inserted").
type Counts map[string]float64

// Sub returns c − o over the names of both.
func (c Counts) Sub(o Counts) Counts {
	out := Counts{}
	for k, v := range c {
		out[k] = v
	}
	for k, v := range o {
		out[k] -= v
	}
	return out
}

// Scale returns c × f.
func (c Counts) Scale(f float64) Counts {
	out := Counts{}
	for k, v := range c {
		out[k] = v * f
	}
	return out
}

// Names are c's names, sorted.
func (c Counts) Names() []string {
	names := make([]string, 0, len(c))
	for k := range c {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Source reads the counters of one server.
type Source interface {
	// Name is the server's key in a Reading ("redis", "mysql", "temporal").
	Name() string
	// Read returns the counters now, less the traffic of earlier Reads
	// (a Source that talks to its server must not count itself).
	Read(ctx context.Context) (Counts, error)
}

// Reading is every Source's counters at one moment.
type Reading struct {
	At time.Time
	By map[string]Counts
}

// Meter reads a set of Sources together.
type Meter struct{ Sources []Source }

// Read reads every Source.
func (m *Meter) Read(ctx context.Context) (Reading, error) {
	r := Reading{At: time.Now(), By: map[string]Counts{}}
	for _, s := range m.Sources {
		c, err := s.Read(ctx)
		if err != nil {
			return Reading{}, fmt.Errorf("%s counters: %w", s.Name(), err)
		}
		r.By[s.Name()] = c
	}
	return r, nil
}

// Phase is what one step of the sale cost, per unit (an admission, an
// order), with the servers' idle traffic (background loops: the API's
// blocklist refresh and sold-out watcher, the outbox relay, Temporal's own
// housekeeping) taken off at the rate measured in an idle window.
type Phase struct {
	Name    string  `json:"name"`
	Units   int     `json:"units"`
	Seconds float64 `json:"seconds"`
	// Per is by server: (delta − idle rate × seconds) / units.
	Per map[string]Counts `json:"per_unit"`
	// Idle is by server: the idle traffic taken off, per unit.
	Idle map[string]Counts `json:"idle_per_unit"`
}

// Rate is the idle traffic per second between two readings of an idle
// window.
func Rate(before, after Reading) map[string]Counts {
	secs := after.At.Sub(before.At).Seconds()
	out := map[string]Counts{}
	for name, c := range after.By {
		out[name] = c.Sub(before.By[name]).Scale(1 / secs)
	}
	return out
}

// Measure makes the Phase of units between two readings, taking idle
// (per second, from Rate; nil for none) off.
func Measure(name string, units int, before, after Reading, idle map[string]Counts) Phase {
	secs := after.At.Sub(before.At).Seconds()
	p := Phase{Name: name, Units: units, Seconds: round(secs, 2), Per: map[string]Counts{}, Idle: map[string]Counts{}}
	for server, c := range after.By {
		d := c.Sub(before.By[server])
		bg := idle[server].Scale(secs)
		per, bgPer := Counts{}, Counts{}
		for k := range d {
			per[k] = round((d[k]-bg[k])/float64(units), 3)
			if bg[k] != 0 {
				bgPer[k] = round(bg[k]/float64(units), 3)
			}
		}
		p.Per[server], p.Idle[server] = per, bgPer
	}
	return p
}

func round(v float64, digits int) float64 {
	f := math.Pow(10, float64(digits))
	return math.Round(v*f) / f
}
