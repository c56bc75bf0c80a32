package htmlreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/bench"
)

// The Temporal cost per order is printed in the table and shown in the HTML
// report, per path, with its split by kind.
func TestCostIsReported(t *testing.T) {
	r := sampleHTMLReport()
	r.Temporal = &bench.TemporalCost{
		ActionsPerOrder: map[string]float64{"paid": 6, "timeout": 5, "cancel": 6},
		EventsPerOrder:  map[string]float64{"paid": 21, "timeout": 20, "cancel": 21},
		ActionsByKind: map[string]map[string]float64{
			"paid":    {"start": 1, "local_activities": 1, "timers": 1, "signals": 1, "activities": 1, "search_attribute_upserts": 1},
			"timeout": {"start": 1, "local_activities": 1, "timers": 1, "activities": 1, "search_attribute_upserts": 1},
			"cancel":  {"start": 1, "local_activities": 1, "timers": 1, "signals": 1, "activities": 1, "search_attribute_upserts": 1},
		},
		Sampled: map[string]int{"paid": 3, "timeout": 3, "cancel": 3},
	}
	var table strings.Builder
	require.NoError(t, bench.WriteTable(&table, r))
	require.Contains(t, table.String(), "paid     6.00 actions, 21.0 events (3 orders)")
	require.Contains(t, table.String(), "timeout  5.00 actions, 20.0 events (3 orders)")

	var page bytes.Buffer
	require.NoError(t, WriteHTML(&page, r))
	require.Contains(t, page.String(), "Temporal cost per order")
	require.Contains(t, page.String(), "<td><b>timeout</b></td><td class=\"num\">5.00</td><td class=\"num\">20.0</td>")

	page.Reset()
	require.NoError(t, WriteHTML(&page, &bench.Report{}))
	require.Contains(t, page.String(), "Not counted")
}
