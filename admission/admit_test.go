package admission_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/internal/testenv"
)

// offers records what admission hands to the starter.
type offers struct {
	mu   sync.Mutex
	reqs []*seckill.OrderRequest
}

func (o *offers) Offer(req *seckill.OrderRequest) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reqs = append(o.reqs, req)
	return true
}

func (o *offers) orderNos() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, len(o.reqs))
	for i, r := range o.reqs {
		out[i] = r.OrderNo
	}
	return out
}

func newAdmission(t *testing.T) (*testenv.Env, *admission.Service, *offers) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	starts := &offers{}
	return e, admission.New(admission.Config{Stock: e.Gate, Starts: starts, PayTimeout: time.Minute,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}), starts
}

func attempt(s *seckill.Session, user int64, qty int, key string) *seckill.Attempt {
	a := &seckill.Attempt{Session: s, UserID: user, Quantity: qty, TraceID: "t" + strconv.FormatInt(user, 10),
		Now: time.Now(), IdempotencyKey: key, Fingerprint: strconv.Itoa(qty)}
	a.KeyTime, _ = admission.KeyTime(key)
	return a
}

// Winners, and only winners, are handed to the starter, with the workflow
// input their reservation makes; a retry of a winning key is handed on
// again (its start is idempotent) under the same order number; losers
// touch nothing.
func TestAdmissionHandsWinnersToTheStarter(t *testing.T) {
	e, c, starts := newAdmission(t)
	sess := e.Session(2, 1, 300)
	ctx := context.Background()
	key := testenv.KeyAt(time.Now())
	var answers []admission.Answer
	for _, a := range []*seckill.Attempt{attempt(sess, 1, 1, key), attempt(sess, 1, 1, key), attempt(sess, 2, 1, ""), attempt(sess, 3, 1, "")} {
		ans, pinned := c.Window(ctx, a)
		require.False(t, pinned)
		require.NoError(t, ans.Err)
		answers = append(answers, c.Admit(ctx, a))
	}
	first, retry, second, loser := answers[0], answers[1], answers[2], answers[3]
	require.NoError(t, first.Err)
	require.NoError(t, retry.Err)
	require.True(t, retry.Admission.Replayed)
	require.Equal(t, first.Admission.OrderNo, retry.Admission.OrderNo)
	require.NoError(t, second.Err)
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(loser.Err))
	require.Equal(t, []string{first.Admission.OrderNo, first.Admission.OrderNo, second.Admission.OrderNo}, starts.orderNos(),
		"the winners (the retry's again), and no loser")
	for _, req := range starts.reqs {
		require.Equal(t, req.ReservedAt.Add(time.Minute), req.PayBy, "the deadline counts from the reservation")
		require.Equal(t, sess.PriceCents, req.PriceCents)
	}
	stock, _, err := e.Gate.Stock(ctx, sess.ID)
	require.NoError(t, err)
	require.Zero(t, stock)
	requireReserved(t, e, sess.ID, 2)
}

// Outside the window nothing is admitted, and a quantity the session does
// not allow is refused before the stock is asked; once paused, a key that
// won before hears its answer again (202, its order) and is handed on, a
// new key hears PAUSED.
func TestAdmissionWindow(t *testing.T) {
	e, c, starts := newAdmission(t)
	sess := e.Session(5, 2, 300)
	ctx := context.Background()

	ans, _ := c.Window(ctx, attempt(sess, 1, 3, ""))
	require.Equal(t, seckill.EINVALID, seckill.ErrorCode(ans.Err))
	upcoming := *sess
	upcoming.StartAt = time.Now().Add(time.Hour)
	ans, _ = c.Window(ctx, attempt(&upcoming, 1, 1, ""))
	require.Equal(t, seckill.ENOTSTARTED, seckill.ErrorCode(ans.Err))

	key := testenv.KeyAt(time.Now())
	won := c.Admit(ctx, attempt(sess, 1, 1, key))
	require.NoError(t, won.Err)
	paused := *sess
	paused.Paused = true
	ans, pinned := c.Window(ctx, attempt(&paused, 1, 1, key))
	require.True(t, pinned)
	require.NoError(t, ans.Err)
	require.Equal(t, won.Admission.OrderNo, ans.Admission.OrderNo)
	ans, pinned = c.Window(ctx, attempt(&paused, 2, 1, testenv.KeyAt(time.Now())))
	require.False(t, pinned)
	require.Equal(t, seckill.EPAUSED, seckill.ErrorCode(ans.Err))
	require.Equal(t, []string{won.Admission.OrderNo, won.Admission.OrderNo}, starts.orderNos())
	stock, _, err := e.Gate.Stock(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 4, stock, "one unit taken, once")
	requireReserved(t, e, sess.ID, 1)
}

// requireReserved checks the session's invariants with its winners still
// in flight (no workflow runs here): reconcile finds nothing wrong, and
// each unit is in Redis's stock or in one of the n reservations.
func requireReserved(t *testing.T, e *testenv.Env, sessionID int64, n int) {
	t.Helper()
	r := e.Reconcile(sessionID)
	require.True(t, r.OK, "%+v", r)
	require.Equal(t, n, r.InFlight)
	require.Equal(t, r.TotalStock, r.RedisStock+r.ReservedQty)
	require.Equal(t, r.TotalStock, r.DBStock, "MySQL is untouched until the workflows create the orders")
}
