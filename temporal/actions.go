package temporal

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// Cost is what one workflow run costs in Temporal Cloud's unit, billable
// actions, counted from its history, and the length of that history.
type Cost struct {
	Actions int `json:"actions"`
	// ByKind splits Actions: start, local_activities, activities,
	// activity_retries, timers, signals, search_attribute_upserts,
	// memo_upserts, other.
	ByKind map[string]int `json:"by_kind"`
	Events int            `json:"events"`
}

// changeVersionKey is the search attribute workflow.GetVersion upserts.
const changeVersionKey = "TemporalChangeVersion"

// CountActions counts the billable actions of one run from its history,
// by Temporal Cloud's rules ("Temporal Cloud Actions" in Temporal's docs):
//
//   - the start is one action; a signal-with-start that started the run
//     (WorkflowExecutionStarted followed at once by its Signaled event) is
//     one action for both;
//   - every activity scheduled is one, and every retry one more (the
//     attempt of its Started event, minus one);
//   - local activities are markers: all markers recorded by one workflow
//     task completion (local activities, GetVersion, side effects) count as
//     one action, plus the local activities' retries the SDK reports in the
//     task's metering metadata;
//   - every timer started is one (implicit ones too);
//   - every signal received is one;
//   - every search-attribute upsert is one, however many attributes it
//     sets, except the TemporalChangeVersion upsert of workflow.GetVersion;
//     attributes given at the start are free;
//   - every memo upsert (WorkflowPropertiesModified), update accepted,
//     options update, Nexus operation or cancellation is one; a child
//     workflow start is two.
//
// What a history cannot show is left out: queries, activity heartbeats and
// workflow-task heartbeats of long local activities. The count is an
// estimate, as the Cloud UI's own per-history count is; seckill's order
// workflow uses none of the missing kinds on its normal paths.
func CountActions(events []*historypb.HistoryEvent) Cost {
	c := Cost{ByKind: map[string]int{}, Events: len(events)}
	add := func(kind string, n int) {
		if n > 0 {
			c.ByKind[kind] += n
			c.Actions += n
		}
	}
	markerTasks := map[int64]bool{}
	for i, e := range events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			add("start", 1)
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			if i == 1 && events[0].GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
				continue // the signal of a signal-with-start: counted with the start
			}
			add("signals", 1)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			add("activities", 1)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			add("activity_retries", int(e.GetActivityTaskStartedEventAttributes().GetAttempt())-1)
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			task := e.GetMarkerRecordedEventAttributes().GetWorkflowTaskCompletedEventId()
			if !markerTasks[task] {
				markerTasks[task] = true
				add("local_activities", 1)
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			add("local_activities", int(e.GetWorkflowTaskCompletedEventAttributes().GetMeteringMetadata().GetNonfirstLocalActivityExecutionAttempts()))
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			add("timers", 1)
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			fields := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
			if _, ok := fields[changeVersionKey]; ok && len(fields) == 1 {
				continue // exempt: workflow versioning
			}
			add("search_attribute_upserts", 1)
		case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
			add("memo_upserts", 1)
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			add("other", 2)
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED,
			enumspb.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED,
			enumspb.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED:
			add("other", 1)
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			if e.GetWorkflowTaskFailedEventAttributes().GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW {
				add("other", 1)
			}
		}
	}
	return c
}

// OrderCost waits for the workflow of an order to end, reads its whole
// history and counts it (CountActions). seckill-lab bench measures the actions
// per order with it, and the tests pin them.
func OrderCost(ctx context.Context, c client.Client, orderNo string) (Cost, error) {
	return WorkflowCost(ctx, c, WorkflowID(orderNo))
}

// RefundCost counts the refund workflow of a payment (refund:<payment_id>)
// once it ended: a refunded order costs its order workflow and this.
func RefundCost(ctx context.Context, c client.Client, paymentID string) (Cost, error) {
	return WorkflowCost(ctx, c, RefundWorkflowID(paymentID))
}

// WorkflowCost waits for a workflow to end, reads its whole history and
// counts it (CountActions).
func WorkflowCost(ctx context.Context, c client.Client, id string) (Cost, error) {
	// A paid or closed order's view is published before its workflow
	// records the last status: wait for the end, or the count is short.
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		return Cost{}, fmt.Errorf("workflow %s: %w", id, err)
	}
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return Cost{}, fmt.Errorf("history of %s: %w", id, err)
		}
		events = append(events, e)
	}
	return CountActions(events), nil
}

// Plus is the cost of two runs together (an order and its refund).
func (c Cost) Plus(o Cost) Cost {
	sum := Cost{Actions: c.Actions + o.Actions, Events: c.Events + o.Events, ByKind: map[string]int{}}
	for _, m := range []map[string]int{c.ByKind, o.ByKind} {
		for k, v := range m {
			sum.ByKind[k] += v
		}
	}
	return sum
}
