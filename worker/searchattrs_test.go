package worker_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/worker"
	"github.com/seckill/seckill/workflows"
)

// The list covers exactly what an order's workflow starts with, and the
// CLI spellings derive from it.
func TestSearchAttributeKeysAreWhatTheWorkflowWrites(t *testing.T) {
	sa := workflows.SearchAttributes(&seckill.OrderRequest{Reservation: seckill.Reservation{SessionID: 7, UserID: 42, TraceID: "t"}})
	require.Equal(t, len(worker.SearchAttributeKeys), sa.Size(), "the workflow starts with every listed attribute, no other")
	for _, k := range worker.SearchAttributeKeys {
		require.True(t, sa.ContainsKey(k), "the workflow does not set %s", k.GetName())
	}
	require.Equal(t, []string{"OrderStatus=Keyword", "SessionID=Int", "UserID=Int", "TraceID=Keyword"}, worker.SearchAttributeSpecs(),
		"the design's list (DESIGN.md, Temporal): change it there first")
	require.Equal(t, []string{"--search-attribute", "OrderStatus=Keyword", "--search-attribute", "SessionID=Int",
		"--search-attribute", "UserID=Int", "--search-attribute", "TraceID=Keyword"}, worker.DevServerFlags())
}
