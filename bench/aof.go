package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// AOFModes are the Redis persistence settings --redis-aof compares: no
// persistence, AOF with fsync every second, AOF with fsync on every write.
var AOFModes = []string{"no", "everysec", "always"}

// AOFRun is the admission script measured once against a private
// redis-server with one persistence setting.
type AOFRun struct {
	PerSecond float64 `json:"per_second"`
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
}

// AOFResult is one persistence setting over the rounds of a run: medians,
// and the spread of the calls/s ((max − min) / median).
type AOFResult struct {
	AOFRun
	PerSecondSpread float64 `json:"per_second_spread"`
	Rounds          int     `json:"rounds"`
}

// privateRedis is a redis-server the bench starts on a free loopback port,
// with its own data directory, never the stack's Redis.
type privateRedis struct {
	mode string
	addr string
	dir  string
	cmd  *exec.Cmd
}

// startPrivateRedis starts redis-server with persistence mode ("no",
// "everysec" or "always"); prefix (e.g. taskset -c 0) runs it pinned.
func startPrivateRedis(ctx context.Context, mode string, prefix []string) (*privateRedis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("--redis-aof needs redis-server on the PATH (apt-get install redis-server)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir, err := os.MkdirTemp("", "seckill-bench-redis-"+mode+"-")
	if err != nil {
		return nil, err
	}
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir, "--save", "",
		"--daemonize", "no", "--logfile", "", "--loglevel", "warning"}
	switch mode {
	case "no":
		args = append(args, "--appendonly", "no")
	case "everysec", "always":
		args = append(args, "--appendonly", "yes", "--appendfsync", mode)
	default:
		os.RemoveAll(dir)
		return nil, fmt.Errorf("--redis-aof: unknown mode %q (no, everysec, always)", mode)
	}
	argv := append(append(append([]string{}, prefix...), bin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p := &privateRedis{mode: mode, addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir, cmd: cmd}
	rdb := goredis.NewClient(&goredis.Options{Addr: p.addr})
	defer rdb.Close()
	for i := 0; ; i++ {
		if rdb.Ping(ctx).Err() == nil {
			return p, nil
		}
		if i == 50 {
			p.stop()
			return nil, fmt.Errorf("private redis-server (%s) on %s did not answer", mode, p.addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *privateRedis) stop() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
	os.RemoveAll(p.dir)
}

// aofResults folds the rounds of each mode into medians and a spread.
func aofResults(rounds []map[string]AOFRun) map[string]AOFResult {
	by := map[string][]AOFRun{}
	for _, r := range rounds {
		for m, x := range r {
			by[m] = append(by[m], x)
		}
	}
	out := map[string]AOFResult{}
	for m, xs := range by {
		var ps, p50, p99 []float64
		for _, x := range xs {
			ps, p50, p99 = append(ps, x.PerSecond), append(p50, x.P50), append(p99, x.P99)
		}
		res := AOFResult{AOFRun: AOFRun{PerSecond: medianOf(ps), P50: medianOf(p50), P99: medianOf(p99)}, Rounds: len(xs)}
		if res.PerSecond > 0 {
			lo, hi := minMax(ps)
			res.PerSecondSpread = (hi - lo) / res.PerSecond
		}
		out[m] = res
	}
	return out
}

// latencyPercentiles of samples (any one unit: milliseconds, seconds).
func latencyPercentiles(ms []float64) (p50, p99 float64) {
	if len(ms) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99)
}
