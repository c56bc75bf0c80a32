package drill_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/drill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/temporal"
)

func config(e *testenv.Env) drill.Config {
	c := drill.Config{
		BaseURL: e.BaseURL, AdminToken: testenv.AdminToken, JWTSecret: testenv.JWTSecret,
		WebhookSecret: testenv.WebhookSecret, Stock: 20, PerUserLimit: 1, Users: 60, Tries: 2,
		PayRatio: 0.5, Settle: 90 * time.Second, IssueToken: auth.IssueToken,
		Owners: e.DB.OrderOwners,
	}
	if testing.Verbose() {
		c.Progress = os.Stderr
	}
	return c
}

func requireOK(t *testing.T, e *testenv.Env, res *drill.Result, err error) {
	t.Helper()
	require.NoError(t, err)
	require.True(t, res.OK, "problems: %v\nresult: %+v", res.Problems, res)
	require.Equal(t, 20, res.Accepted)
	e.RequireInvariants(res.SessionID)
}

// The worker process is killed (SIGKILL) in the middle of a burst and a new
// one started: every accepted order reaches WAIT_PAY exactly once, and the
// rest of the sale (payments, cancels, a late payment) completes.
func TestDrillWorkerKilledMidBurst(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	first := e.Spawn(e.ProcessEnv(), "worker")
	c := config(e)
	c.DuringBurst = first.Kill
	c.AfterBurst = func() { e.Spawn(e.ProcessEnv(), "worker") }
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
}

// MySQL is unreachable for a while during the burst (the worker's
// connections go through a toxiproxy that closes and severs them):
// admission goes on in Redis, the order activities fail and retry, and
// once MySQL is back every accepted order completes.
func TestDrillMySQLOutage(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	links := e.Links("worker")
	e.StartWorkerVia(links)
	c := config(e)
	c.DuringBurst = func() { links.MySQL.SetDown(true) }
	c.AfterBurst = func() {
		time.Sleep(3 * time.Second)
		links.MySQL.SetDown(false)
	}
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
}

// Payment and the pay timeout race on many orders at once: each payment
// lands within ±150 ms of its order's deadline. Every order ends PAID, or
// CLOSED with its stock back (a payment that lost becomes REFUND_PENDING),
// never both and never neither; the invariants hold across all of them.
func TestDrillPaymentRacesTimeout(t *testing.T) {
	paymentRace(t, testenv.New(t, testenv.Options{PayTimeout: 2 * time.Second}), nil)
}

// The same race through a stall: the Temporal server (standing for a
// starved machine) answers nothing for 9 s from half a second after the
// first deadline (timers firing, payments arriving), then everything
// late. The pay timers, the payments and the
// tasks moved off the worker's sticky queue all come at once afterwards;
// every order still settles within the minute (a fresh machine once left
// an order QUEUED: the worker's pollers, one pool steered by a stale
// sticky backlog hint, all waited on the empty sticky queue while the
// normal queue's tasks waited).
func TestDrillPaymentRacesTimeoutThroughAStall(t *testing.T) {
	srv := testenv.StartTemporalServer(t)
	e := testenv.New(t, testenv.Options{PayTimeout: 2 * time.Second, TemporalAddr: srv.Addr})
	paymentRace(t, e, func(firstDeadline time.Time) {
		time.Sleep(time.Until(firstDeadline.Add(500 * time.Millisecond)))
		srv.Stall(9 * time.Second)
	})
}

// paymentRace sells 30 orders and pays each within ±150 ms of its
// deadline; stall, when set, runs beside the payments from the first
// deadline on. Every order ends PAID, or CLOSED with its payment waiting
// for its refund, within a minute, and the invariants hold.
func paymentRace(t *testing.T, e *testenv.Env, stall func(firstDeadline time.Time)) {
	const n = 30
	sess := e.Session(n, 1, 100)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type placed struct {
		no       string
		shopper  *client.Client
		deadline time.Time
	}
	var orders []placed
	for u := int64(1); u <= n; u++ {
		shopper := e.Shopper(u)
		a, err := shopper.Buy(ctx, sess.ID, client.BuyOptions{})
		require.NoError(t, err)
		orders = append(orders, placed{no: a.OrderNo, shopper: shopper})
	}
	// The deadline counts from the 202 and shows from the first poll, even
	// while the order is QUEUED (payable): no need to wait for its row,
	// which a busy machine may create after the deadline.
	for i, o := range orders {
		v, err := o.shopper.Order(ctx, o.no)
		require.NoError(t, err)
		require.False(t, v.PayDeadline.IsZero(), "%s (%s) shows no deadline", o.no, v.Status)
		orders[i].deadline = v.PayDeadline
	}
	var wg sync.WaitGroup
	if stall != nil {
		first := orders[0].deadline
		for _, o := range orders {
			if o.deadline.Before(first) {
				first = o.deadline
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stall(first)
		}()
	}
	stamp := time.Now().UnixNano()
	provider := e.Client()
	for i, o := range orders {
		jitter := time.Duration(rand.Int64N(int64(300*time.Millisecond))) - 150*time.Millisecond
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(o.deadline.Add(jitter)))
			p := seckill.Payment{EventID: fmt.Sprintf("race-evt-%d-%d", stamp, i), PaymentID: fmt.Sprintf("race-%d-%d", stamp, i), OrderNo: o.no, AmountCents: 100}
			_, err := provider.Pay(ctx, p)
			// 200, or 503 when the order's workflow had just ended and the
			// provider must retry: a provider retries until 200.
			for seckill.ErrorCode(err) == seckill.EUNAVAILABLE {
				time.Sleep(100 * time.Millisecond)
				_, err = provider.Pay(ctx, p)
			}
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	outcomes := map[seckill.Status]int{}
	for _, o := range orders {
		settled, err := o.shopper.WaitOrder(ctx, o.no, seckill.StatusPaid, seckill.StatusRefundPending)
		if err != nil {
			explainStuck(t, e, o.no)
		}
		require.NoError(t, err)
		outcomes[settled.Status]++
	}
	t.Logf("outcomes: %v", outcomes)
	e.Eventually(10*time.Second, "releases done", func() error {
		if r := e.Reconcile(sess.ID); r.InFlight != 0 {
			return fmt.Errorf("in flight %d", r.InFlight)
		}
		return nil
	})
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, outcomes[seckill.StatusPaid], rep.Orders[seckill.StatusPaid])
	require.Equal(t, n-outcomes[seckill.StatusPaid], rep.DBStock, "every order that did not end PAID gave its unit back")
	require.Equal(t, n-outcomes[seckill.StatusPaid], rep.RedisStock)
	require.Equal(t, outcomes[seckill.StatusRefundPending], rep.RefundsPending, "every payment that lost waits for its refund")
}

// explainStuck logs where an order that never settled stands in each
// part: its row, its Redis reservation and pending-start entry, its
// payments, and its workflow as Temporal describes it. (A fresh machine
// once left an order of TestDrillPaymentRacesTimeout QUEUED for the
// whole minute; the next time says which part held it.)
func explainStuck(t *testing.T, e *testenv.Env, no string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	row, err := e.DB.Order(ctx, no)
	t.Logf("stuck %s: row %+v (%v)", no, row, err)
	resv, err := e.Gate.Reservation(ctx, no)
	t.Logf("stuck %s: reservation %+v (%v)", no, resv, err)
	if id, ok := seckill.OrderNoSession(no); ok {
		pending, err := e.Gate.Pending(ctx, id, time.Now().Add(time.Hour), 1000)
		for _, p := range pending {
			if p.OrderNo == no {
				t.Logf("stuck %s: pending start since %s", no, p.ReservedAt)
			}
		}
		pays, err2 := e.DB.SessionPayments(ctx, id)
		for _, p := range pays {
			if p.OrderNo == no {
				t.Logf("stuck %s: payment %+v", no, p)
			}
		}
		if err != nil || err2 != nil {
			t.Logf("stuck %s: %v %v", no, err, err2)
		}
	}
	if e.Temporal != nil {
		d, err := e.Temporal.DescribeWorkflowExecution(ctx, temporal.WorkflowID(no), "")
		if err != nil {
			t.Logf("stuck %s: workflow: %v", no, err)
			return
		}
		info := d.GetWorkflowExecutionInfo()
		t.Logf("stuck %s: workflow %s, history length %d, pending activities %d, pending workflow task %v",
			no, info.GetStatus(), info.GetHistoryLength(), len(d.GetPendingActivities()), d.GetPendingWorkflowTask())
		// Who polls the task queue, and when they last did: a queue whose
		// pollers all sit elsewhere leaves its tasks waiting.
		q, err := e.Temporal.DescribeTaskQueue(ctx, e.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err != nil {
			t.Logf("stuck %s: task queue: %v", no, err)
			return
		}
		for _, p := range q.GetPollers() {
			t.Logf("stuck %s: task queue %s poller %s last polled %s", no, e.TaskQueue, p.GetIdentity(), p.GetLastAccessTime().AsTime())
		}
	}
}

// restartable is a Temporal server of the test's own that can be killed
// (SIGKILL) and started again on the same storage.
type restartable interface {
	Kill()
	Start()
}

// The Temporal server is killed (SIGKILL) mid-burst and restarted, both the
// file-backed dev server and the durable one (PostgreSQL, 8 shards, the
// deploy/temporal config): starts that failed meanwhile are picked up by
// the relay from the pending-start outbox, and nothing accepted is lost.
func TestDrillTemporalRestart(t *testing.T) {
	servers := []struct {
		name  string
		start func(testing.TB) (string, restartable)
	}{
		{"dev server", func(t testing.TB) (string, restartable) {
			srv := testenv.StartTemporalServer(t)
			return srv.Addr, srv
		}},
		{"durable server", func(t testing.TB) (string, restartable) {
			srv := testenv.StartDurableTemporalServer(t)
			return srv.Addr, srv
		}},
	}
	for _, server := range servers {
		t.Run(server.name, func(t *testing.T) {
			addr, srv := server.start(t)
			e := testenv.New(t, testenv.Options{TemporalAddr: addr})
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			r := &relay.Relay{Gate: e.Gate, Store: e.DB, Starter: e.Orders, PayTimeout: 15 * time.Minute, MinAge: time.Second, Log: e.Log}
			go r.Run(ctx, 500*time.Millisecond)
			c := config(e)
			c.DuringBurst = srv.Kill
			c.AfterBurst = srv.Start
			res, err := drill.Run(context.Background(), c)
			requireOK(t, e, res, err)
		})
	}
}

// faultDrill is a drill whose burst is spread over two seconds and whose
// fault starts once a tenth of the attempts are answered: the fault meets
// stock still for sale, so purchases really are in flight through it.
func faultDrill(e *testenv.Env, base string) drill.Config {
	c := config(e)
	c.BaseURL = base
	c.Ramp = 2 * time.Second
	c.FaultAfter = 0.1
	return c
}

// spawnAPI starts `seckill api` (the production client settings: Redis
// read timeout 500 ms, start timeout 300 ms) whose connections go through
// toxis of its own.
func spawnAPI(e *testenv.Env, extra ...string) (*testenv.Links, string) {
	e.T.Helper()
	links := e.Links("api")
	_, base := e.SpawnAPI(e.ProcessEnv(append(e.Via(links), extra...)...))
	return links, base
}

// Redis replies to the API come later than its read timeout in the middle
// of a burst: the admission script ran, or did not, and the API cannot
// know. Each such purchase is answered 503 (never a 409 for a unit it
// holds), and the shopper's retry with the same key gets the truth.
func TestDrillRedisSlowerThanTimeout(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	e.Spawn(e.ProcessEnv(), "worker") // with the relay, as in production
	links, base := spawnAPI(e)
	c := faultDrill(e, base)
	var undo func()
	c.DuringBurst = func() { undo = links.Redis.Latency(900*time.Millisecond, 300*time.Millisecond) }
	c.AfterBurst = func() { undo() }
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
	require.Positive(t, res.Unknown, "no purchase ever met the latency")
}

// The API's Redis stalls (requests arrive, replies never do) and then
// resets every connection, mid-burst: timeouts and broken connections
// whose outcome is unknown; every one resolves with its key.
func TestDrillRedisStallsThenResets(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	e.Spawn(e.ProcessEnv(), "worker")
	links, base := spawnAPI(e)
	c := faultDrill(e, base)
	healed := make(chan struct{})
	c.DuringBurst = func() {
		go func() {
			defer close(healed)
			undo := links.Redis.Stall()
			time.Sleep(1500 * time.Millisecond)
			undo()
			undo = links.Redis.ResetPeer(0)
			time.Sleep(1500 * time.Millisecond)
			undo()
		}()
	}
	c.AfterBurst = func() { <-healed }
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
	require.Positive(t, res.Unknown, "no purchase ever met the stall")
}

// Connections are reset mid-request on both sides of the sale: the API's
// Redis (admission) and the worker's MySQL (order creation, whose commit
// may or may not have happened). Activities retry on the order number and
// purchases retry on their key: nothing is doubled, nothing lost.
func TestDrillConnectionResets(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	w := e.Links("worker")
	e.Spawn(e.ProcessEnv(e.Via(w)...), "worker")
	links, base := spawnAPI(e)
	c := faultDrill(e, base)
	var undoRedis, undoMySQL func()
	c.DuringBurst = func() {
		undoRedis = links.Redis.ResetPeer(0)
		undoMySQL = w.MySQL.ResetPeer(0)
	}
	c.AfterBurst = func() {
		undoRedis()
		time.Sleep(2 * time.Second) // the orders are being created meanwhile
		undoMySQL()
	}
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
}

// MySQL takes over a second per statement while the orders are created
// and again while unpaid ones are compensated (a short pay timeout, so
// orders time out under the slow database). Activities time out and retry;
// each order is created once, closed once, its unit given back once.
func TestDrillSlowMySQL(t *testing.T) {
	const payTimeout = 10 * time.Second
	e := testenv.New(t, testenv.Options{NoWorker: true, PayTimeout: payTimeout})
	w := e.Links("worker")
	e.StartWorkerVia(w)
	c := config(e)
	c.PayTimeout = payTimeout
	var undo func()
	c.DuringBurst = func() { undo = w.MySQL.Latency(1200*time.Millisecond, 300*time.Millisecond) }
	c.AfterBurst = func() {
		time.Sleep(2 * time.Second) // creation grinds through the slow statements
		undo()
	}
	c.DuringSettle = func() {
		undo := w.MySQL.Latency(1200*time.Millisecond, 300*time.Millisecond)
		// Payments and cancels meet it, and so do the timeouts of the
		// orders left unpaid.
		time.AfterFunc(12*time.Second, undo)
	}
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
	require.Positive(t, res.Cancelled+res.TimedOut, "nothing was compensated")
}

// The Temporal frontend answers slowly to both the API (slower than its
// start timeout: winners stop waiting, starts go on in the background and
// the relay) and the worker (polls and activity completions): every
// accepted order still starts exactly once and completes.
func TestDrillTemporalSlow(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	w := e.Links("worker")
	e.Spawn(e.ProcessEnv(e.Via(w)...), "worker")
	links, base := spawnAPI(e)
	c := faultDrill(e, base)
	var undoAPI, undoWorker func()
	c.DuringBurst = func() {
		undoAPI = links.Temporal.Latency(time.Second, 200*time.Millisecond)
		undoWorker = w.Temporal.Latency(500*time.Millisecond, 100*time.Millisecond)
	}
	c.AfterBurst = func() {
		time.Sleep(3 * time.Second)
		undoAPI()
		undoWorker()
	}
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
}
