package chaos_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/chaos"
	"github.com/seckill/seckill/drill"
	"github.com/seckill/seckill/internal/testenv"
)

// A two-minute soak: sales back to back while the API, the worker and
// Temporal are killed and restarted and their connections slowed,
// stalled, reset and cut at random. Every sale's answers hold against
// MySQL, every session reconciles, no violation. The seed is logged;
// SECKILL_CHAOS_SEED replays the same faults, SECKILL_CHAOS_DURATION
// changes the length.
func TestChaosSoak(t *testing.T) {
	testenv.SkipShort(t, "a two-minute soak on the real MariaDB and Redis, with a Temporal dev server of its own")
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SECKILL_CHAOS_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "SECKILL_CHAOS_SEED")
	}
	duration := 2 * time.Minute
	if s := os.Getenv("SECKILL_CHAOS_DURATION"); s != "" {
		var err error
		duration, err = time.ParseDuration(s)
		require.NoError(t, err, "SECKILL_CHAOS_DURATION")
	}
	t.Logf("chaos seed %d: replay with SECKILL_CHAOS_SEED=%d go test -run TestChaosSoak ./chaos/", seed, seed)
	dir := t.TempDir()
	cfg := chaos.Config{
		Duration: duration, Seed: seed, Binary: testenv.Binary(t), TemporalBin: testenv.TemporalBin(t), Dir: dir,
		MySQLDSN: e.DSN, RedisAddr: e.RedisAddr, RedisPrefix: e.Prefix, TaskQueue: e.TaskQueue,
		JWTSecret: testenv.JWTSecret, WebhookSecret: testenv.WebhookSecret, AdminToken: testenv.AdminToken,
		PayTimeout: 5 * time.Second, IssueToken: auth.IssueToken,
		Sale: drill.Config{Stock: 10, PerUserLimit: 1, Users: 40, Tries: 2, PayRatio: 0.5,
			Ramp: 5 * time.Second, Settle: 90 * time.Second},
	}
	if testing.Verbose() {
		cfg.Progress = os.Stderr
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				lines := strings.Split(string(b), "\n")
				t.Logf("%s (last lines):\n%s", l, strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
	})
	res, err := chaos.Run(context.Background(), cfg)
	require.NoError(t, err)
	var table strings.Builder
	res.WriteTable(&table)
	t.Logf("seed %d\n%s", seed, table.String())
	require.Zero(t, res.Violations(), "seed %d: %v", seed, res.Problems)
	require.Positive(t, res.Sales)
	faults := 0
	for _, n := range res.Faults {
		faults += n
	}
	require.Positive(t, faults, "no fault was injected")
}

// Chaos sends faults and load only to this machine: a MySQL or Redis
// elsewhere is refused before anything is started.
func TestChaosRefusesRemoteServices(t *testing.T) {
	base := chaos.Config{Duration: time.Second, PayTimeout: time.Second,
		MySQLDSN: "root:@tcp(127.0.0.1:3306)/x", RedisAddr: "127.0.0.1:6379"}
	for name, mod := range map[string]func(*chaos.Config){
		"mysql": func(c *chaos.Config) { c.MySQLDSN = "root:@tcp(10.1.2.3:3306)/x" },
		"redis": func(c *chaos.Config) { c.RedisAddr = "db.example.com:6379" },
	} {
		c := base
		mod(&c)
		_, err := chaos.Run(context.Background(), c)
		require.ErrorContains(t, err, "not a loopback address", name)
	}
}
