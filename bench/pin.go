package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// PinPlan puts the API side (the API and Redis) on one CPU and the order
// tier (Temporal, the worker, MySQL) on another with taskset, so that the
// winners' latency measures the API rather than CPU contention with
// Temporal. The load generator (this process, with the Lua and Temporal
// baselines' clients) is not pinned; the baseline servers start on the
// front CPU.
type PinPlan struct {
	FrontCPU, BackCPU string
	Front, Back       []PinnedProcess
}

// PinnedProcess is one process the plan pins, by role.
type PinnedProcess struct {
	Role string `json:"role"`
	PID  int    `json:"pid"`
}

// CPUPinning is what the report says about pinning (cpu_pinning).
type CPUPinning struct {
	Mode     string          `json:"mode"` // "off" or "pinned"
	FrontCPU string          `json:"front_cpu,omitempty"`
	BackCPU  string          `json:"back_cpu,omitempty"`
	Front    []PinnedProcess `json:"front,omitempty"` // API, Redis
	Back     []PinnedProcess `json:"back,omitempty"`  // Temporal, worker, MySQL
}

// frontPrefix is the command prefix that starts a process on the front
// CPU, beside the API it stands for (a baseline server, a private Redis);
// nil when nothing is pinned.
func (p *PinPlan) frontPrefix() []string {
	if p == nil {
		return nil
	}
	return []string{"taskset", "-c", p.FrontCPU}
}

// CheckPinning fails with a clear message when pinning cannot work here.
func CheckPinning() error {
	if _, err := exec.LookPath("taskset"); err != nil {
		return errors.New("--pin needs taskset (util-linux) on the PATH")
	}
	if n := runtime.NumCPU(); n < 2 {
		return fmt.Errorf("--pin needs at least 2 CPUs, this process may use %d", n)
	}
	return nil
}

// apply pins every process of the plan (all its threads, taskset -a) and
// returns a function that puts each back on the CPUs it had before.
func (p *PinPlan) apply() (restore func(), err error) {
	type saved struct {
		pid  int
		mask string
	}
	var done []saved
	restore = func() {
		for _, s := range done {
			_ = exec.Command("taskset", "-a", "-p", s.mask, strconv.Itoa(s.pid)).Run()
		}
	}
	pin := func(procs []PinnedProcess, cpu string) error {
		for _, pp := range procs {
			out, err := exec.Command("taskset", "-p", strconv.Itoa(pp.PID)).CombinedOutput()
			if err != nil {
				return fmt.Errorf("taskset -p %d (%s): %v: %s", pp.PID, pp.Role, err, strings.TrimSpace(string(out)))
			}
			// "pid 123's current affinity mask: 3"
			f := strings.Fields(string(out))
			if len(f) == 0 {
				return fmt.Errorf("taskset -p %d: unexpected output %q", pp.PID, out)
			}
			mask := f[len(f)-1]
			if out, err := exec.Command("taskset", "-a", "-p", "-c", cpu, strconv.Itoa(pp.PID)).CombinedOutput(); err != nil {
				return fmt.Errorf("taskset -a -p -c %s %d (%s): %v: %s", cpu, pp.PID, pp.Role, err, strings.TrimSpace(string(out)))
			}
			done = append(done, saved{pp.PID, mask})
		}
		return nil
	}
	if err := pin(p.Front, p.FrontCPU); err != nil {
		restore()
		return nil, err
	}
	if err := pin(p.Back, p.BackCPU); err != nil {
		restore()
		return nil, err
	}
	return restore, nil
}

// ListeningPID returns the process listening on TCP port (IPv4 or IPv6,
// any address), found through /proc: the socket's inode in /proc/net/tcp*,
// then the process holding it.
func ListeningPID(port int) (int, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			x := strings.Fields(sc.Text())
			// sl local_address rem_address st ... inode (field 9)
			if len(x) < 10 || x[3] != "0A" {
				continue
			}
			i := strings.LastIndexByte(x[1], ':')
			if p, err := strconv.ParseInt(x[1][i+1:], 16, 32); err == nil && int(p) == port {
				inodes["socket:["+x[9]+"]"] = true
			}
		}
		fh.Close()
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("nothing listens on port %d", port)
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && inodes[l] {
			return strconv.Atoi(strings.Split(fd, "/")[2])
		}
	}
	return 0, fmt.Errorf("no process found holding the listener on port %d", port)
}
