package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// RedisCluster is a Redis Cluster of the test process's own: 6
// redis-server processes on loopback (3 masters, 3 replicas), made the way
// scripts/redis-cluster.sh makes one, on free ports, in a temporary
// directory. The nodes are children of the test process and die with it
// (SIGKILL on its death), so no test depends on, or leaves behind, a
// cluster.
type RedisCluster struct {
	// Addrs are the nodes' addresses (SECKILL_REDIS_ADDR's seeds).
	Addrs []string
	// NodeTimeout is how long a master may stay silent before its replica
	// takes over.
	NodeTimeout time.Duration
	*redisProcs
}

// redisProcs are redis-server processes of the test process, children that
// die with it (SIGKILL on its death), each with a directory under dir.
type redisProcs struct {
	dir   string
	mu    sync.Mutex
	nodes map[string]*exec.Cmd // address → its process, while it runs
	order []string             // every address, in start order
}

func newRedisProcs(name string) (*redisProcs, error) {
	for _, tool := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is needed for the Redis Cluster and Sentinel tests (%v).\nInstall it with: apt-get install redis-server", tool, err)
		}
	}
	dir, err := os.MkdirTemp("", "seckill-redis-"+name+"-")
	if err != nil {
		return nil, err
	}
	return &redisProcs{dir: dir, nodes: map[string]*exec.Cmd{}}, nil
}

// start runs redis-server on port with args, in a directory of its own.
func (p *redisProcs) start(port int, args ...string) (string, error) {
	return p.startWith("", port, args...)
}

// startWith is start with a config file first ("" for none).
func (p *redisProcs) startWith(conf string, port int, args ...string) (string, error) {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	nodeDir := filepath.Join(p.dir, strconv.Itoa(port))
	if err := os.Mkdir(nodeDir, 0o755); err != nil {
		return "", err
	}
	argv := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", nodeDir, "--logfile", "redis.log"}
	if conf != "" {
		argv = append([]string{conf}, argv...)
	}
	cmd := exec.Command("redis-server", append(argv, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("redis-server: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nodes[addr] = cmd
	p.order = append(p.order, addr)
	return addr, nil
}

// Addr is the cluster's seeds in SECKILL_REDIS_ADDR's form.
func (c *RedisCluster) Addr() string { return strings.Join(c.Addrs, ",") }

// StartRedisCluster starts a cluster for t, stopped when t ends. A missing
// redis-server or redis-cli fails the test with the command that installs
// them; under -short it is skipped.
func StartRedisCluster(t testing.TB) *RedisCluster {
	t.Helper()
	SkipShort(t, "redis-server and redis-cli (a Redis Cluster)")
	c, err := startRedisCluster(t, time.Second)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.logTails(t)
		}
		c.Stop()
	})
	return c
}

// ReplicaInSync waits until a running replica of master has its
// replication link up and has applied everything master had written when
// asked, at most d: the precondition of a failover that keeps the master's
// data. A link that is up is not enough: a replica in the middle of a full
// resync, or one that fell behind on a loaded machine (a stalled fsync, a
// missed ping), reports it up and may hold none of the sale. The error
// says what each candidate reported.
func (c *RedisCluster) ReplicaInSync(ctx context.Context, master string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, port, _ := strings.Cut(master, ":")
	var last error
	for {
		last = c.replicaCaughtUp(ctx, master, port)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Replicas are the running nodes that replicate master.
func (c *RedisCluster) Replicas(ctx context.Context, master string) []string {
	_, port, _ := strings.Cut(master, ":")
	var out []string
	for _, a := range c.Running() {
		if r, err := infoReplication(ctx, a); err == nil && r["role"] == "slave" && r["master_port"] == port {
			out = append(out, a)
		}
	}
	return out
}

// replicaCaughtUp is one look of ReplicaInSync: the master's replication
// offset first, then whether a replica's applied offset has reached it.
func (c *RedisCluster) replicaCaughtUp(ctx context.Context, master, port string) error {
	m, err := infoReplication(ctx, master)
	if err != nil {
		return fmt.Errorf("master %s: %w", master, err)
	}
	want, err := strconv.ParseInt(m["master_repl_offset"], 10, 64)
	if err != nil {
		return fmt.Errorf("master %s: no master_repl_offset in %v", master, m)
	}
	last := fmt.Errorf("no replica of %s", master)
	for _, a := range c.Running() {
		r, err := infoReplication(ctx, a)
		if err != nil || r["role"] != "slave" || r["master_port"] != port {
			continue
		}
		got, _ := strconv.ParseInt(r["slave_repl_offset"], 10, 64)
		switch {
		case r["master_link_status"] != "up":
			last = fmt.Errorf("replica %s of %s: link %s", a, master, r["master_link_status"])
		case got < want:
			last = fmt.Errorf("replica %s of %s: applied offset %d, master at %d", a, master, got, want)
		default:
			return nil
		}
	}
	return last
}

// infoReplication is a node's INFO replication as field → value.
func infoReplication(ctx context.Context, addr string) (map[string]string, error) {
	n := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer n.Close()
	s, err := n.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	f := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			f[k] = v
		}
	}
	return f, nil
}

// logTails logs the end of every node's log, for a failed test: the
// nodes' directory goes with the cluster.
func (c *redisProcs) logTails(t testing.TB) {
	c.mu.Lock()
	order := append([]string(nil), c.order...)
	c.mu.Unlock()
	for _, a := range order {
		_, port, _ := strings.Cut(a, ":")
		b, err := os.ReadFile(filepath.Join(c.dir, port, "redis.log"))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("redis node %s, last lines of its log:\n%s", a, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
}

var shared struct {
	sync.Mutex
	c *RedisCluster
}

// SharedRedisCluster is one cluster for every test of the process that
// only uses it (a test that kills nodes starts its own): started by the
// first, stopped by Main when the tests end.
func SharedRedisCluster(t testing.TB) *RedisCluster {
	t.Helper()
	SkipShort(t, "redis-server and redis-cli (a Redis Cluster)")
	shared.Lock()
	defer shared.Unlock()
	if shared.c == nil {
		c, err := startRedisCluster(t, time.Second)
		if err != nil {
			t.Fatalf("%v", err)
		}
		shared.c = c
	}
	return shared.c
}

// OnTopologies runs f as subtests on a single node ("node": the default
// Redis, server "") and on the shared Redis Cluster ("cluster", server its
// seeds), server in SECKILL_REDIS_ADDR's form for Options.RedisServer:
// for the code that must work on both.
func OnTopologies(t *testing.T, f func(t *testing.T, server string)) {
	t.Run("node", func(t *testing.T) { f(t, "") })
	t.Run("cluster", func(t *testing.T) { f(t, SharedRedisCluster(t).Addr()) })
}

// Main runs a package's tests and then stops what they shared (the shared
// Redis Cluster); a package using SharedRedisCluster calls it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	shared.Lock()
	if shared.c != nil {
		shared.c.Stop()
	}
	shared.Unlock()
	os.Exit(code)
}

func startRedisCluster(t testing.TB, nodeTimeout time.Duration) (*RedisCluster, error) {
	procs, err := newRedisProcs("cluster")
	if err != nil {
		return nil, err
	}
	c := &RedisCluster{NodeTimeout: nodeTimeout, redisProcs: procs}
	ports := freePorts(t, 12)
	for i := 0; i < 6; i++ {
		addr, err := c.start(ports[i],
			"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(ports[6+i]), "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
			"--appendonly", "yes", "--appendfsync", "everysec", "--save", "")
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Addrs = append(c.Addrs, addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, a := range c.Addrs {
		if err := c.waitNode(ctx, a, func(n *goredis.Client) error { return n.Ping(ctx).Err() }); err != nil {
			c.Stop()
			return nil, err
		}
	}
	// The first three are the masters, the others their replicas.
	create := exec.CommandContext(ctx, "redis-cli", append(append([]string{"--cluster", "create"}, c.Addrs...),
		"--cluster-replicas", "1", "--cluster-yes")...)
	if out, err := create.CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitReady(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// waitNode retries check against the node at addr until it passes or ctx ends.
func (c *redisProcs) waitNode(ctx context.Context, addr string, check func(*goredis.Client) error) error {
	n := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer n.Close()
	for {
		err := check(n)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis node %s (logs in %s): %w", addr, c.dir, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitReady waits until every running node sees the cluster OK and every
// replica's link to its master is up (a replica still syncing could not
// take over).
func (c *RedisCluster) WaitReady(ctx context.Context) error {
	for _, a := range c.Running() {
		err := c.waitNode(ctx, a, func(n *goredis.Client) error {
			info, err := n.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("cluster_state not ok")
			}
			repl, err := n.Info(ctx, "replication").Result()
			if err != nil {
				return err
			}
			if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
				return fmt.Errorf("replica not in sync yet")
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Running lists the nodes not killed.
func (c *redisProcs) Running() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, a := range c.order {
		if c.nodes[a] != nil {
			out = append(out, a)
		}
	}
	return out
}

// Kill SIGKILLs the node at addr: no shutdown, no last write to its AOF.
func (c *redisProcs) Kill(addr string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cmd := c.nodes[addr]
	if cmd == nil {
		return fmt.Errorf("no running node %s", addr)
	}
	delete(c.nodes, addr)
	return cmd.Process.Kill()
}

// Freeze stops the node at addr (SIGSTOP) until Thaw: it reads nothing,
// not even what its master sends it, and sends nothing, not even its
// reconnection; the cluster's other nodes take it for alive until the
// node timeout.
func (c *redisProcs) Freeze(addr string) error { return c.signal(addr, syscall.SIGSTOP) }

// Thaw resumes a node Freeze stopped (SIGCONT).
func (c *redisProcs) Thaw(addr string) error { return c.signal(addr, syscall.SIGCONT) }

func (c *redisProcs) signal(addr string, sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cmd := c.nodes[addr]
	if cmd == nil {
		return fmt.Errorf("no running node %s", addr)
	}
	return cmd.Process.Signal(sig)
}

// Stop kills every node and removes their directory.
func (c *redisProcs) Stop() {
	for _, a := range c.Running() {
		_ = c.Kill(a)
	}
	_ = os.RemoveAll(c.dir)
}
