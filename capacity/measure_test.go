package capacity_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/capacity"
	"github.com/seckill/seckill/internal/testenv"
)

// TestMeasure runs the measurement small (10 orders per path) on MariaDB,
// a redis-server of its own and the Temporal dev server, and checks the
// counts docs/CAPACITY.md says; `seckill-lab capacity` (scripts/
// capacity.sh) runs it larger, on a Temporal server of its own whose
// metrics it reads, and keeps the report. (On a file-backed server of the
// test's own the starts are slower, the phases longer, and the idle
// traffic taken off them too coarse for the pins.)
func TestMeasure(t *testing.T) {
	testenv.SkipShort(t, "MariaDB, redis-server and the Temporal dev server")
	var log bytes.Buffer
	rep, err := capacity.Run(context.Background(), capacity.Config{Orders: 10, PayTimeout: 30 * time.Second,
		MySQLDSN:     envOr("SECKILL_TEST_MYSQL_DSN", "root:@tcp(127.0.0.1:3306)/"),
		TemporalAddr: envOr("SECKILL_TEST_TEMPORAL_ADDR", "127.0.0.1:7233"), Log: &log})
	require.NoError(t, err, log.String())
	var md bytes.Buffer
	rep.Markdown(&md)
	t.Log("\n" + md.String())
	checkCounts(t, rep)
}

// checkCounts pins the counts that are deterministic, so they cannot move
// without docs/CAPACITY.md moving too; the idle traffic taken off leaves
// a few hundredths of noise.
func checkCounts(t *testing.T, rep *capacity.Report) {
	t.Helper()
	const noise = 0.1
	pin := func(phase, server, counter string, want float64) {
		t.Helper()
		p := rep.Phase(phase)
		require.NotNil(t, p, phase)
		assert.InDeltaf(t, want, p.Per[server][counter], noise, "%s: %s %s per unit", phase, server, counter)
	}
	// Every admission that reaches Redis runs two scripts: the per-user
	// limit and the admission; a loser after the sell-out none.
	pin("admission_winner", "redis", "cmd:evalsha", 2)
	pin("admission_loser_script", "redis", "cmd:evalsha", 2)
	pin("admission_loser_soldout_flag", "redis_client", "round_trips", 0)
	pin("admission_loser_soldout_flag", "mysql", "select_commands", 0)
	// Losers never reach MySQL; a winner's admission neither (the session
	// comes from memory, refreshed once a second per process).
	assert.Less(t, rep.Phase("admission_winner").Per["mysql"]["rows_inserted"], noise)
	// Rows: the order, its slot, a ledger row and its order.created; a
	// payment, a ledger row and its order event; a ledger row, its event
	// and the slot freed.
	pin("create", "mysql", "rows_inserted", 4)
	pin("paid", "mysql", "rows_inserted", 3)
	pin("cancel", "mysql", "rows_inserted", 2)
	pin("cancel", "mysql", "rows_deleted", 1)
	pin("timeout", "mysql", "rows_inserted", 2)
	pin("timeout", "mysql", "rows_deleted", 1)
	// A payment reads the order's row (locked) and the payment's earlier
	// rows, nothing more: the view is cached from the row its transaction
	// left, not read back.
	pin("paid", "mysql", "select_commands", 2)
	// A winner's admission is three round trips: the two scripts and the
	// starter clearing the pending-start entry after the start.
	pin("admission_winner", "redis_client", "round_trips", 3)
	pin("admission_loser_script", "redis_client", "round_trips", 2)
	// Polling an order is one Redis read, no MySQL.
	pin("poll_order", "redis", "cmd:hmget", 1)
	pin("poll_order", "redis_client", "round_trips", 1)
	pin("poll_order", "mysql", "select_commands", 0)
	// The bench's Temporal baseline touches neither MySQL nor Redis: what
	// it costs is Temporal's alone, beside the create and close phases.
	pin("temporal_noop", "mysql", "rows_inserted", 0)
	pin("temporal_noop", "redis_client", "round_trips", 0)
	// Temporal's billable actions per path (TestActionsPerOrder pins their kinds).
	assert.InDelta(t, 6, rep.Histories["paid"].Actions, 0.01)
	assert.InDelta(t, 6, rep.Histories["cancel"].Actions, 0.01)
	assert.InDelta(t, 5, rep.Histories["timeout"].Actions, 0.01)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
