package capacity

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Process reads the CPU time of a process on Linux (/proc/<pid>/stat,
// user and system, in clock ticks of 10 ms): what a server without CPU
// counters of its own (the Temporal dev server) or the measurement's own
// process spends per unit. A phase needs a few hundred units for the
// ticks to be a measurement.
type Process struct {
	Label string // the source's name: "process:<Label>"
	PID   int
}

func (p *Process) Name() string { return "process:" + p.Label }

// clockTickUS is a clock tick in microseconds: USER_HZ is 100 on every
// Linux that matters.
const clockTickUS = 10_000

func (p *Process) Read(context.Context) (Counts, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil {
		return nil, err
	}
	utime, stime, err := ParseProcStat(string(b))
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", p.PID, err)
	}
	return Counts{"cpu_us": float64((utime + stime) * clockTickUS)}, nil
}

// ParseProcStat returns utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line; the command name, in parentheses, may hold spaces.
func ParseProcStat(stat string) (utime, stime int64, err error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("no command name in %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, f[11].
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("short stat %q", stat)
	}
	if utime, err = strconv.ParseInt(f[11], 10, 64); err != nil {
		return 0, 0, err
	}
	stime, err = strconv.ParseInt(f[12], 10, 64)
	return utime, stime, err
}
