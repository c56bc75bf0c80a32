package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/workflows"
)

// TestReplayRecordedHistories replays histories recorded on the Temporal
// dev server (paid, paid by signal-with-start, cancelled, timed out; see
// testdata/README.md). A change to OrderWorkflow that is not replay-safe
// for orders already running fails here: guard it with workflow.GetVersion
// instead (docs/ARCHITECTURE.md, "Changing the order workflow").
func TestReplayRecordedHistories(t *testing.T) {
	for _, f := range histories(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			require.NoError(t, replay(workflows.OrderWorkflow, f))
		})
	}
}

// The replay is strict: a workflow that gives other commands than the
// recorded run (here none at all: no CreateOrder, no pay timer) fails it
// as nondeterministic (the SDK's TMPRL1100), so TestReplayRecordedHistories
// cannot pass by tolerating a change.
func TestReplayRefusesChangedCommands(t *testing.T) {
	changed := func(workflow.Context, seckill.OrderRequest) (workflows.OrderState, error) {
		return workflows.OrderState{}, nil
	}
	for _, f := range histories(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			require.ErrorContains(t, replay(changed, f), "TMPRL1100")
		})
	}
}

func histories(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/history_*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// replay replays one recorded history with wf registered as OrderWorkflow.
func replay(wf any, file string) error {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: workflows.OrderWorkflowName})
	return r.ReplayWorkflowHistoryFromJSONFile(nil, file)
}
