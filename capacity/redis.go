package capacity

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// Redis reads a redis-server's INFO: calls per command ("cmd:<name>", as
// commandstats names them: "cmd:evalsha", "cmd:client|setinfo"; commands a
// script calls count too) and the microseconds spent in them
// ("usec:<name>"), the
// bytes in and out of every client ("net_input_bytes",
// "net_output_bytes") and the server's CPU time ("cpu_us"). It counts the whole server: point it at one of the
// measurement's own. Its own INFO calls and their bytes are left out.
type Redis struct {
	// C should be a client of one connection speaking RESP2 (NewRedisProbe):
	// the bytes it leaves out are then exact.
	C *goredis.Client

	reads         int
	selfIn        float64
	selfOut       float64
	lastReplySize float64
}

// NewRedisProbe returns a Redis source on its own single connection.
func NewRedisProbe(addr string) *Redis {
	return &Redis{C: goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 1, MinIdleConns: 1, Protocol: 2, DisableIdentity: true})}
}

// infoCommand is what Read sends; infoRequestBytes its RESP encoding's size.
var (
	infoCommand      = []any{"INFO", "stats", "commandstats", "cpu"}
	infoRequestBytes = float64(len(respArray(infoCommand)))
)

func respArray(args []any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		s := fmt.Sprint(a)
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(s), s)
	}
	return b.String()
}

func (r *Redis) Name() string { return "redis" }

func (r *Redis) Read(ctx context.Context) (Counts, error) {
	s, err := r.C.Do(ctx, infoCommand...).Text()
	if err != nil {
		return nil, err
	}
	c := ParseRedisInfo(s)
	// The server counts this request's bytes before answering, and the
	// earlier replies' bytes after they were sent: this Read's reply is in
	// the next one's counters.
	r.reads++
	r.selfIn += infoRequestBytes
	r.selfOut += r.lastReplySize
	r.lastReplySize = float64(len(fmt.Sprintf("$%d\r\n", len(s))) + len(s) + 2)
	c["cmd:info"] -= float64(r.reads)
	delete(c, "usec:info") // the probe's own, mostly
	c["net_input_bytes"] -= r.selfIn
	c["net_output_bytes"] -= r.selfOut
	return c, nil
}

// ParseRedisInfo reads the counters Redis reports in INFO stats, INFO
// commandstats and INFO cpu: calls per command, network bytes, and the
// server's CPU time in microseconds ("cpu_us", user and system: the
// figure that says how many admissions one Redis core serves; it includes
// the probe's own INFO calls, a few tens of microseconds each).
func ParseRedisInfo(info string) Counts {
	c := Counts{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch {
		case name == "total_net_input_bytes":
			c["net_input_bytes"] = atof(value)
		case name == "total_net_output_bytes":
			c["net_output_bytes"] = atof(value)
		case name == "used_cpu_sys" || name == "used_cpu_user":
			c["cpu_us"] += math.Round(atof(value) * 1e6)
		case strings.HasPrefix(name, "cmdstat_"):
			// cmdstat_evalsha:calls=3,usec=…,rejected_calls=0,failed_calls=0
			// (a script's usec includes the commands it calls, which
			// are counted under their own names too).
			cmd := strings.TrimPrefix(name, "cmdstat_")
			for _, kv := range strings.Split(value, ",") {
				switch k, v, _ := strings.Cut(kv, "="); k {
				case "calls":
					c["cmd:"+cmd] = atof(v)
				case "usec":
					c["usec:"+cmd] = atof(v)
				}
			}
		}
	}
	return c
}

func atof(s string) float64 {
	v, _ := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return v
}
