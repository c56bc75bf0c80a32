package temporal

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/workflows"
)

// StartSession starts the life of a session (SessionWorkflow: preheat
// before the start, retire after the end); started is false when it runs
// or ran already. Safe to call again for every open session: that is how
// the worker makes sure sessions created while Temporal was down get one.
func (o *Orders) StartSession(ctx context.Context, sessionID int64) (bool, error) {
	life := workflows.SessionLife{SessionID: sessionID, PreheatLead: o.PreheatLead, RetainAfter: o.RetainAfter}
	if life.PreheatLead <= 0 {
		life.PreheatLead = seckill.DefaultPreheatLead
	}
	if life.RetainAfter <= 0 {
		life.RetainAfter = seckill.DefaultRetainAfter
	}
	opts := client.StartWorkflowOptions{
		ID:        SessionWorkflowID(o.taskQueue, life.SessionID),
		TaskQueue: o.taskQueue,
		// One life per session, ever: a retired session is not preheated
		// again by a late call.
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    sdktemporal.NewSearchAttributes(workflows.SessionIDKey.ValueSet(life.SessionID)),
		StaticSummary:                            fmt.Sprintf("session %d: preheat %s before the start, retire %s after the end", life.SessionID, life.PreheatLead, life.RetainAfter),
	}
	started, err := o.startOnce(ctx, opts, workflows.SessionWorkflowName, life)
	if err != nil {
		return false, unavailable(err)
	}
	return started, nil
}

// SessionChanged tells a session's life that its window changed. A session
// without a running life (retired, or never started) needs no telling.
func (o *Orders) SessionChanged(ctx context.Context, sessionID int64) error {
	err := o.c.SignalWorkflow(ctx, SessionWorkflowID(o.taskQueue, sessionID), "", workflows.SessionChangedSignal, nil)
	var missing *serviceerror.NotFound
	if errors.As(err, &missing) {
		return nil
	}
	if err != nil {
		return unavailable(err)
	}
	return nil
}
