package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// The rates of the order tier (orders, payments, closes per second) are
// compared with the no-op workflow's, but on a machine shared by every
// process of the stack they also measure how much CPU the Temporal server
// was left: the no-op baseline runs on an idle stack, an order's creation
// beside the API, MySQL and Redis doing that order's own work. So the
// bench also reads, when the Temporal server runs on this machine, the CPU
// time the server process spent per workflow in each phase, and the share
// of the machine's busy CPU it got. The first says whether seckill makes
// the server do more per order than per no-op; the second, how much of a
// rate ratio below 1 is CPU the server never had.

// userHZ is the unit of the CPU times in /proc (USER_HZ, 100 on Linux
// whatever the kernel's own tick rate).
const userHZ = 100

// serverCPU meters the Temporal server process of a run.
type serverCPU struct {
	pid int
}

// cpuSnap is one reading: the server's CPU time and the machine's busy
// CPU time, in seconds (all cores).
type cpuSnap struct {
	server, busy float64
}

// meterServer returns a meter of the process listening on the Temporal
// address, or nil when that is not a loopback address of this machine or
// /proc cannot say (the figures are then absent from the report).
func meterServer(addr string) *serverCPU {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil
	}
	pid, err := ListeningPID(n)
	if err != nil {
		return nil
	}
	m := &serverCPU{pid: pid}
	if _, err := m.snap(); err != nil {
		return nil
	}
	return m
}

// snap reads the server's and the machine's CPU times now.
func (m *serverCPU) snap() (cpuSnap, error) {
	server, err := ProcessCPU(m.pid)
	if err != nil {
		return cpuSnap{}, err
	}
	busy, err := machineBusy()
	if err != nil {
		return cpuSnap{}, err
	}
	return cpuSnap{server: server, busy: busy}, nil
}

// ProcessCPU is the CPU time process pid has spent, user and system, in
// seconds, from /proc.
func ProcessCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid … utime stime: fields 14 and 15, counted after
	// the command name, which may hold spaces.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return (utime + stime) / userHZ, nil
}

// machineBusy reads the CPU time the machine's cores spent working (all
// cores, in seconds) from the first line of /proc/stat: user, nice,
// system, irq and softirq; not idle, iowait, or steal (time another guest
// of the host had: not this machine's work).
func machineBusy() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy float64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q: %w", f[i], err)
		}
		busy += v
	}
	return busy / userHZ, nil
}

// quietCores is the busy CPU, in cores, under which the machine counts
// as quiet (quiet): above an idle stack's own (the servers' timers and
// heartbeats), far below a workflow backlog being drained.
const quietCores = 0.3

// quiet waits until the machine's cores were busy less than quietCores
// over a quarter of a second, or at most most, and says how long it
// waited: the work a phase leaves behind (the Temporal server's
// visibility and timer tasks after a step's orders are created, its
// history written back) then no longer weighs on the next phase's first
// measurements. It waits for nothing where /proc cannot say.
func quiet(ctx context.Context, most time.Duration) time.Duration {
	const every = 250 * time.Millisecond
	start := time.Now()
	prev, err := machineBusy()
	for err == nil && time.Since(start) < most {
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-time.After(every):
		}
		var now float64
		if now, err = machineBusy(); err == nil && (now-prev)/every.Seconds() < quietCores {
			break
		}
		prev = now
	}
	return time.Since(start)
}

// phase is what the server spent between two readings: CPU seconds, and
// its part of the machine's busy CPU.
type phase struct {
	serverSeconds, share float64
}

// since is the phase from a to b.
func since(a, b cpuSnap) phase {
	p := phase{serverSeconds: b.server - a.server}
	if busy := b.busy - a.busy; busy > 0 {
		// The two counters are read one after the other, so over a phase
		// where the server alone was busy the ratio can come out a hair
		// above 1.
		p.share = min(1, p.serverSeconds/busy)
	}
	return p
}

// msPer is the phase's server CPU per workflow, in milliseconds.
func (p phase) msPer(n int) float64 {
	if n <= 0 {
		return 0
	}
	return p.serverSeconds * 1000 / float64(n)
}

// mark is a reading to close a phase later with (phase); nil when m is nil
// or the reading failed.
func (m *serverCPU) mark() *cpuSnap {
	if m == nil {
		return nil
	}
	s, err := m.snap()
	if err != nil {
		return nil
	}
	return &s
}

// phase closes a phase opened by mark.
func (m *serverCPU) phase(from *cpuSnap) phase {
	if m == nil || from == nil {
		return phase{}
	}
	to, err := m.snap()
	if err != nil {
		return phase{}
	}
	return since(*from, to)
}

// burstMeter reads, around one burst, the CPU time of the admission-only
// API's process, of Redis's (nil when it is not one server on this
// machine) and of the load generator (this process), and the machine's
// busy time. A process that cannot be read counts nothing.
type burstMeter struct {
	api, redis, bench *serverCPU
	at                [3]cpuSnap
}

func newBurstMeter(apiPID int, redisAddr string) *burstMeter {
	return &burstMeter{api: &serverCPU{pid: apiPID}, redis: meterServer(redisAddr), bench: &serverCPU{pid: os.Getpid()}}
}

func (m *burstMeter) read() [3]cpuSnap {
	var s [3]cpuSnap
	for i, p := range []*serverCPU{m.api, m.redis, m.bench} {
		if p != nil {
			s[i], _ = p.snap()
		}
	}
	return s
}

func (m *burstMeter) start() { m.at = m.read() }

// stop is what was spent since start.
func (m *burstMeter) stop() cpuSpent {
	now := m.read()
	d := func(i int) float64 {
		if now[i].server == 0 {
			return 0
		}
		return now[i].server - m.at[i].server
	}
	return cpuSpent{api: d(0), redis: d(1), bench: d(2), machine: now[2].busy - m.at[2].busy}
}

// cpuSpent is CPU time in seconds, by process.
type cpuSpent struct{ api, redis, bench, machine float64 }

func (c *cpuSpent) add(o cpuSpent) {
	c.api, c.redis, c.bench, c.machine = c.api+o.api, c.redis+o.redis, c.bench+o.bench, c.machine+o.machine
}

// perRequest is c over n requests, in microseconds; nil when nothing was
// read.
func (c cpuSpent) perRequest(n int) *BurstCPU {
	if n == 0 || c.machine <= 0 {
		return nil
	}
	us := func(v float64) float64 { return v / float64(n) * 1e6 }
	return &BurstCPU{API: us(c.api), Redis: us(c.redis), Bench: us(c.bench), Machine: us(c.machine)}
}
