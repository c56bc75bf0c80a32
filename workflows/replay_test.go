package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill/workflows"
)

// TestReplayRecordedHistories replays histories recorded on the Temporal
// dev server (paid, cancelled, timed out; see testdata/README.md). A change
// to OrderWorkflow that is not replay-safe for orders already running fails
// here: guard it with workflow.GetVersion instead.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/history_*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(workflows.OrderWorkflow, workflow.RegisterOptions{Name: workflows.OrderWorkflowName})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}
