package capacity_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/capacity"
	"github.com/seckill/seckill/temporal"
)

func TestParseRedisInfo(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:0.500001\r\nused_cpu_sys_children:9.0\r\n" +
		"# Stats\r\ntotal_connections_received:7\r\ntotal_net_input_bytes:1234\r\ntotal_net_output_bytes:5678\r\n\r\n" +
		"# Commandstats\r\ncmdstat_evalsha:calls=42,usec=900,usec_per_call=21.43,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_client|setinfo:calls=2,usec=3,usec_per_call=1.50,rejected_calls=0,failed_calls=0\r\n"
	assert.Equal(t, capacity.Counts{"net_input_bytes": 1234, "net_output_bytes": 5678, "cmd:evalsha": 42, "usec:evalsha": 900,
		"cmd:client|setinfo": 2, "usec:client|setinfo": 3, "cpu_us": 1_750_001},
		capacity.ParseRedisInfo(info))
}

func TestParsePersistence(t *testing.T) {
	text := `# TYPE persistence_requests counter
persistence_requests{namespace="default",operation="CreateWorkflowExecution",service_name="history"} 3
persistence_requests{namespace="default",operation="UpdateWorkflowExecution",service_name="history"} 5
persistence_requests{namespace="system",operation="GetTransferTasks",service_name="history"} 2
persistence_requests{namespace="default",operation="GetNamespace",service_name="frontend"} 1
persistence_latency_bucket{namespace="default",operation="UpdateWorkflowExecution",le="0.01"} 9
`
	assert.Equal(t, capacity.Counts{"op:CreateWorkflowExecution": 3, "op:UpdateWorkflowExecution": 5, "op:GetTransferTasks": 2,
		"op:GetNamespace": 1, "writes": 8, "reads": 3}, capacity.ParsePersistence(text))
}

// Measure takes the idle rate times the phase's length off, per unit.
func TestMeasure_takesIdleOff(t *testing.T) {
	t0 := time.Unix(0, 0)
	before := capacity.Reading{At: t0, By: map[string]capacity.Counts{"redis": {"cmd:evalsha": 100, "cmd:zrangebyscore": 10}}}
	after := capacity.Reading{At: t0.Add(2 * time.Second), By: map[string]capacity.Counts{"redis": {"cmd:evalsha": 300, "cmd:zrangebyscore": 14}}}
	idle := map[string]capacity.Counts{"redis": {"cmd:zrangebyscore": 2}}
	p := capacity.Measure("winners", 100, before, after, idle)
	assert.Equal(t, 2.0, p.Seconds)
	assert.Equal(t, capacity.Counts{"cmd:evalsha": 2, "cmd:zrangebyscore": 0}, p.Per["redis"])
	assert.Equal(t, capacity.Counts{"cmd:zrangebyscore": 0.04}, p.Idle["redis"])

	rate := capacity.Rate(before, after)
	assert.Equal(t, capacity.Counts{"cmd:evalsha": 100, "cmd:zrangebyscore": 2}, rate["redis"])
}

func TestReportMarkdown(t *testing.T) {
	r := &capacity.Report{Date: "2026-12-01", Commit: "abc", OrdersPerPath: 2, PayTimeout: "20s",
		Phases: []capacity.Phase{{Name: "poll_order", Units: 2, Per: map[string]capacity.Counts{"redis": {"cmd:hmget": 1, "cmd:get": 0.001}}}},
		Histories: map[string]capacity.HistoryCost{"paid": capacity.MeanCost([]temporal.Cost{
			{Actions: 6, Events: 18, ByKind: map[string]int{"start": 1, "signals": 1}},
			{Actions: 6, Events: 18, ByKind: map[string]int{"start": 1, "signals": 1}},
		})}}
	var b bytes.Buffer
	r.Markdown(&b)
	out := b.String()
	require.Contains(t, out, "| phase | units | s | cmd:hmget |")
	assert.Contains(t, out, "| poll_order | 2 | 0.0 | 1.00 |")
	assert.NotContains(t, out, "cmd:get", "a counter no phase moved is left out")
	assert.Contains(t, out, "| paid | 2 | 6.00 | 18.00 | signals 1, start 1 |")
}

func TestParseProcStat(t *testing.T) {
	u, s, err := capacity.ParseProcStat("9209 (tem poral) R 9115 9115 21838 0 -1 4194304 125 0 0 0 31 7 0 0 20 0 1 0 100915")
	require.NoError(t, err)
	assert.Equal(t, []int64{31, 7}, []int64{u, s})
	_, _, err = capacity.ParseProcStat("garbage")
	assert.Error(t, err)
}

func TestRedisClient_countsRoundTrips(t *testing.T) {
	r := capacity.NewRedisClient()
	process := r.ProcessHook(func(context.Context, goredis.Cmder) error { return nil })
	pipeline := r.ProcessPipelineHook(func(context.Context, []goredis.Cmder) error { return nil })
	ctx := context.Background()
	require.NoError(t, process(ctx, goredis.NewCmd(ctx, "EVALSHA", "x", 0)))
	require.NoError(t, pipeline(ctx, []goredis.Cmder{goredis.NewCmd(ctx, "HMGET", "k", "f"), goredis.NewCmd(ctx, "ZREM", "k", "m")}))
	require.NoError(t, pipeline(ctx, []goredis.Cmder{goredis.NewCmd(ctx, "HELLO", 3), goredis.NewCmd(ctx, "CLIENT", "SETINFO", "x", "y")}))
	c, err := r.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, capacity.Counts{"round_trips": 2, "conn_setups": 1, "sent:evalsha": 1, "sent:hmget": 1, "sent:zrem": 1,
		"sent:hello": 1, "sent:client": 1}, c)
}
