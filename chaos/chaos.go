// Package chaos is the randomized fault soak behind `seckill-lab chaos`: it
// starts a stack of its own on this machine (a file-backed Temporal dev
// server, one API and one worker from the seckill binary, each connection
// to Redis, MySQL and Temporal through a toxiproxy), runs fault drills
// (package drill) back to back against it while a seeded random injector
// kills and restarts processes and adds toxics (latency above the client
// timeouts, stalls, resets, a slow MySQL, links down), and ends with the
// invariant report and a table of what it did. Bounded in time, it stops
// by itself; all its traffic stays on loopback.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/drill"
	"github.com/seckill/seckill/mysql"
	"github.com/seckill/seckill/redis"
)

// Config describes one soak.
type Config struct {
	Duration time.Duration // sales start until then; the last one then settles
	Seed     uint64        // the same seed injects the same faults in the same order
	// Binary is the seckill binary to run the API and the worker from;
	// TemporalBin the Temporal CLI (bin/temporal, built by `make temporal`).
	Binary, TemporalBin string
	// Dir holds the processes' logs and the Temporal database.
	Dir string
	// MySQLDSN names the database of the soak (created and migrated);
	// RedisAddr, RedisPrefix and TaskQueue are the soak's own.
	MySQLDSN, RedisAddr, RedisPrefix, TaskQueue string
	// JWTSecret, WebhookSecret and AdminToken are the stack's secrets:
	// fresh ones when empty.
	JWTSecret, WebhookSecret []byte
	AdminToken               string
	// PayTimeout is the stack's SECKILL_PAY_TIMEOUT: short, so that
	// timeouts and their compensation are part of every sale.
	PayTimeout time.Duration
	// Sale is the shape of each sale (stock, shoppers, ...); the stack's
	// fields (URL, secrets) are filled in.
	Sale drill.Config
	// IssueToken mints shopper tokens (auth.IssueToken).
	IssueToken func(secret []byte, user int64, ttl time.Duration, now time.Time) (string, error)
	Progress   io.Writer
}

// Result is what the soak did and found.
type Result struct {
	Seed      uint64            `json:"seed"`
	Duration  string            `json:"duration"`
	Sales     int               `json:"sales"`
	Requests  int               `json:"requests"`
	Unknown   int               `json:"unknown"`  // purchase attempts that met an undecided answer
	Resolved  int               `json:"resolved"` // ... and got the truth with their key
	Orders    int               `json:"orders"`
	Payments  int               `json:"payments"` // orders that ended PAID
	Refunds   int               `json:"refunds"`  // payments that lost their order
	Faults    map[string]int    `json:"faults"`
	Results   []*drill.Result   `json:"sales_results"`
	Problems  []string          `json:"problems"`
	Reconcile []*seckill.Report `json:"final_reconcile"`
}

// Violations is the number of broken invariants and wrong answers found.
func (r *Result) Violations() int { return len(r.Problems) }

// loopback refuses an address that is not on this machine: chaos only
// ever sends faults and load to a stack of its own.
func loopback(what, hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("%s %q: %w", what, hostport, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s %s is not a loopback address: chaos runs against this machine only", what, hostport)
	}
	return nil
}

// Run runs the soak. An error means it could not run (or its stack could
// not be brought back); broken invariants are in the Result's Problems.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.JWTSecret == nil {
		cfg.JWTSecret = []byte(randomHex(16))
	}
	if cfg.WebhookSecret == nil {
		cfg.WebhookSecret = []byte(randomHex(16))
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken = randomHex(16)
	}
	if cfg.Duration <= 0 || cfg.PayTimeout <= 0 {
		return nil, errors.New("chaos: duration and pay timeout must be positive")
	}
	dsn, err := mysqldriver.ParseDSN(cfg.MySQLDSN)
	if err != nil {
		return nil, err
	}
	for what, addr := range map[string]string{"MySQL": dsn.Addr, "Redis": cfg.RedisAddr} {
		if err := loopback(what, addr); err != nil {
			return nil, err
		}
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(cfg.Progress, "chaos %s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	logf("seed %d (replay the same faults with --seed %d), logs in %s", cfg.Seed, cfg.Seed, cfg.Dir)

	db, err := mysql.Open(ctx, cfg.MySQLDSN)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return nil, err
	}
	s, err := startStack(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	logf("stack up: API %s, Temporal %s", s.baseURL, s.tempAddr)

	res := &Result{Seed: cfg.Seed, Duration: cfg.Duration.String(), Faults: map[string]int{}, Problems: []string{}}
	for _, k := range Kinds {
		res.Faults[k] = 0
	}
	in := &injector{s: s, rng: newRand(cfg.Seed), log: logf, count: res.Faults, burst: make(chan struct{})}
	fctx, stopFaults := context.WithTimeout(ctx, cfg.Duration)
	defer stopFaults()
	injected := make(chan struct{})
	go func() { defer close(injected); in.run(fctx) }()

	sale := cfg.Sale
	sale.BaseURL, sale.AdminToken, sale.JWTSecret, sale.WebhookSecret = s.baseURL, cfg.AdminToken, cfg.JWTSecret, cfg.WebhookSecret
	sale.PayTimeout, sale.IssueToken, sale.Owners = cfg.PayTimeout, cfg.IssueToken, db.OrderOwners
	sale.DuringBurst = in.bursting
	if sale.FaultAt == 0 {
		sale.FaultAt = max(sale.Ramp/5, 100*time.Millisecond)
	}
	if sale.HTTP == nil {
		sale.HTTP = client.NewHTTPClient(10 * time.Second)
	}
	for fctx.Err() == nil {
		r, err := drill.Run(ctx, sale)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// The stack was too broken to set a sale up (the API down
			// while creating the session): not a violation; try again.
			logf("sale not started: %v", err)
			time.Sleep(time.Second)
			continue
		}
		res.add(r)
		logf("sale %d (session %d): %d attempts, %d accepted, %d paid, %d of %d undecided attempts resolved (answers %v), %d problems",
			res.Sales, r.SessionID, r.Attempts, r.Accepted, r.Paid, r.Resolved, r.Unknown, r.Unknowns, len(r.Problems))
	}
	<-injected
	logf("faults over, stack healed; final check of every session")
	if err := s.waitReady(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	final := &drill.Result{}
	for _, r := range res.Results {
		rep, err := drill.Reconcile(ctx, sale, r.SessionID)
		if err != nil {
			return nil, err
		}
		res.Reconcile = append(res.Reconcile, rep)
		if !rep.OK {
			final.Problems = append(final.Problems, fmt.Sprintf("session %d: reconcile: %v", r.SessionID, rep.Problems))
		}
		if rep.InFlight != 0 {
			final.Problems = append(final.Problems, fmt.Sprintf("session %d: %d reservations in flight", r.SessionID, rep.InFlight))
		}
	}
	res.Problems = append(res.Problems, final.Problems...)
	return res, nil
}

func (r *Result) add(d *drill.Result) {
	r.Sales++
	r.Results = append(r.Results, d)
	r.Requests += d.Requests
	r.Unknown += d.Unknown
	r.Resolved += d.Resolved
	r.Orders += max(d.Orders, 0)
	r.Payments += d.Paid
	r.Refunds += d.Refunds
	for _, p := range d.Problems {
		r.Problems = append(r.Problems, fmt.Sprintf("session %d: %s", d.SessionID, p))
	}
}

// WriteTable prints the soak's table: requests, faults injected by kind,
// orders, payments, refunds, violations.
func (r *Result) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "seed\t%d\n", r.Seed)
	fmt.Fprintf(tw, "duration\t%s\n", r.Duration)
	fmt.Fprintf(tw, "sales\t%d\n", r.Sales)
	fmt.Fprintf(tw, "requests\t%d\n", r.Requests)
	fmt.Fprintf(tw, "unknown answers resolved\t%d of %d\n", r.Resolved, r.Unknown)
	total := 0
	kinds := make([]string, 0, len(r.Faults))
	for k, n := range r.Faults {
		kinds = append(kinds, k)
		total += n
	}
	sort.Strings(kinds)
	fmt.Fprintf(tw, "faults injected\t%d\n", total)
	for _, k := range kinds {
		fmt.Fprintf(tw, "  %s\t%d\n", k, r.Faults[k])
	}
	fmt.Fprintf(tw, "orders\t%d\n", r.Orders)
	fmt.Fprintf(tw, "payments\t%d\n", r.Payments)
	fmt.Fprintf(tw, "refunds\t%d\n", r.Refunds)
	fmt.Fprintf(tw, "violations\t%d\n", r.Violations())
	tw.Flush()
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  violation: %s\n", strings.TrimSpace(p))
	}
}

// quiet drops the Temporal client's log lines while chaos waits for its
// server to come up.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}

// DefaultDir is a fresh directory for the logs of one soak.
func DefaultDir() (string, error) { return os.MkdirTemp("", "seckill-chaos-") }

// Cleanup removes what a passing soak leaves: its database, its Redis keys
// and, when chaos made it, its directory.
func Cleanup(ctx context.Context, cfg Config, removeDir bool) error {
	var errs []error
	errs = append(errs, mysql.DropDatabase(ctx, cfg.MySQLDSN))
	rdb := redis.NewClient(&goredis.UniversalOptions{Addrs: []string{cfg.RedisAddr}})
	defer rdb.Close()
	errs = append(errs, redis.DeletePrefix(ctx, rdb, cfg.RedisPrefix))
	if removeDir {
		errs = append(errs, os.RemoveAll(cfg.Dir))
	}
	return errors.Join(errs...)
}
