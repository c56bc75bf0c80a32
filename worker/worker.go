// Package worker builds the Temporal worker of seckill: the registrations of
// the order workflow and its activities under their explicit names, shared
// by `seckill worker`, `seckill dev` and the tests.
package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/workflows"
)

// Registry is what both a real worker and the test environment offer.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers the order workflow and the activities of acts.
func Register(r Registry, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.OrderWorkflow, workflow.RegisterOptions{Name: workflows.OrderWorkflowName})
	r.RegisterActivityWithOptions(acts.CreateOrder, activity.RegisterOptions{Name: activities.CreateOrderName})
	r.RegisterActivityWithOptions(acts.ApplyPayment, activity.RegisterOptions{Name: activities.ApplyPaymentName})
	r.RegisterActivityWithOptions(acts.CloseAndRelease, activity.RegisterOptions{Name: activities.CloseAndReleaseName})
}

// RegisterRefunds registers the refund workflow and its activities.
func RegisterRefunds(r Registry, refunds *activities.Refunds) {
	r.RegisterWorkflowWithOptions(workflows.RefundWorkflow, workflow.RegisterOptions{Name: workflows.RefundWorkflowName})
	r.RegisterActivityWithOptions(refunds.RefundPayment, activity.RegisterOptions{Name: activities.RefundPaymentName})
	r.RegisterActivityWithOptions(refunds.MarkRefunded, activity.RegisterOptions{Name: activities.MarkRefundedName})
	r.RegisterActivityWithOptions(refunds.RecordRefundFailure, activity.RegisterOptions{Name: activities.RecordRefundFailureName})
}

// RegisterReconcile registers the scheduled reconcile workflow and its activity.
func RegisterReconcile(r Registry, rec *activities.Reconciler) {
	r.RegisterWorkflowWithOptions(workflows.ReconcileWorkflow, workflow.RegisterOptions{Name: workflows.ReconcileWorkflowName})
	r.RegisterActivityWithOptions(rec.ReconcileAll, activity.RegisterOptions{Name: activities.ReconcileAllName})
}

// RegisterSessions registers the session life workflow and its activities.
func RegisterSessions(r Registry, sessions *activities.Sessions) {
	r.RegisterWorkflowWithOptions(workflows.SessionWorkflow, workflow.RegisterOptions{Name: workflows.SessionWorkflowName})
	r.RegisterActivityWithOptions(sessions.LoadSession, activity.RegisterOptions{Name: activities.LoadSessionName})
	r.RegisterActivityWithOptions(sessions.PreheatSession, activity.RegisterOptions{Name: activities.PreheatSessionName})
	r.RegisterActivityWithOptions(sessions.RetireSession, activity.RegisterOptions{Name: activities.RetireSessionName})
	r.RegisterActivityWithOptions(sessions.DrawSession, activity.RegisterOptions{Name: activities.DrawSessionName})
	r.RegisterActivityWithOptions(sessions.PassRights, activity.RegisterOptions{Name: activities.PassRightsName})
	r.RegisterActivityWithOptions(sessions.RecordLost, activity.RegisterOptions{Name: activities.RecordLostName})
	r.RegisterActivityWithOptions(sessions.PublishRegistrants, activity.RegisterOptions{Name: activities.PublishRegistrantsName})
}

// RegisterDraw registers the steps that need the draw key: sealing a
// draw's seed and the draw.
func RegisterDraw(r Registry, sessions *activities.Sessions) {
	r.RegisterActivityWithOptions(sessions.CommitDraw, activity.RegisterOptions{Name: activities.CommitDrawName})
	r.RegisterActivityWithOptions(sessions.DrawSession, activity.RegisterOptions{Name: activities.DrawSessionName})
}

// NewDraw returns a worker on the draw's task queue (workflows.DrawQueue)
// with the steps that need the draw key: only processes holding it
// (`seckill worker`) run one.
func NewDraw(c client.Client, taskQueue string, sessions *activities.Sessions) sdkworker.Worker {
	w := sdkworker.New(c, workflows.DrawQueue(taskQueue), sdkworker.Options{})
	RegisterDraw(w, sessions)
	return w
}

// New returns a worker on taskQueue with the order, refund, reconcile and
// session workflows and their activities registered. The caller starts
// and stops it.
func New(c client.Client, taskQueue string, acts *activities.Activities, refunds *activities.Refunds, rec *activities.Reconciler, sessions *activities.Sessions) sdkworker.Worker {
	w := sdkworker.New(c, taskQueue, sdkworker.Options{
		// Orders are short; a slow MySQL must not let a poller hoard tasks.
		MaxConcurrentActivityExecutionSize: 64,
		// A sale is a burst of many short workflow tasks: two pollers (the
		// default) leave the task queue backed up during a burst, more
		// keep it drained (docs/BENCHMARKS.md). Autoscaling pollers, not a
		// fixed number: a fixed number is one pool shared by the sticky and
		// the normal queue, steered by the sticky queue's backlog hint, and
		// after a stall (a starved machine, a paused server) that hint goes
		// stale: every poller waits out a long poll on the empty sticky
		// queue while the normal queue's tasks (the first task of an order
		// started by its payment, every task moved off the sticky queue)
		// wait a minute. The autoscaling balancer keeps the normal queue
		// polled (drill.TestDrillPaymentRacesTimeoutThroughAStall).
		// Never fewer than 8 per queue: scaled down to the default one
		// while no task came, a poller rarely waits on the partition a
		// payment's, cancel's or fired timer's task lands on, and matching
		// writes the task to its backlog and reads it back (`seckill-lab
		// capacity`: 0.4 – 0.9 backlog writes per paid or cancelled order
		// with the default, 0 – 0.08 with 8; docs/BENCHMARKS.md).
		WorkflowTaskPollerBehavior: sdkworker.NewPollerBehaviorAutoscaling(sdkworker.PollerBehaviorAutoscalingOptions{
			InitialNumberOfPollers: 8, MinimumNumberOfPollers: 8, MaximumNumberOfPollers: 8,
		}),
		MaxConcurrentActivityTaskPollers: 8,
	})
	Register(w, acts)
	RegisterRefunds(w, refunds)
	RegisterReconcile(w, rec)
	RegisterSessions(w, sessions)
	return w
}

// SearchAttributeKeys is the one list of the custom search attributes the
// order workflow writes, name and type, in the order ops read them. Every
// other spelling is generated from it (`seckill search-attributes` for
// scripts/temporal-dev.sh, DevServerFlags for servers started from Go) or
// checked against it (docker-compose.yml, by a test).
var SearchAttributeKeys = []temporal.SearchAttributeKey{
	workflows.OrderStatusKey,
	workflows.SessionIDKey,
	workflows.UserIDKey,
	workflows.TraceIDKey,
}

// SearchAttributeSpecs are SearchAttributeKeys as the Temporal CLI spells
// them: "Name=Type" ("OrderStatus=Keyword"), for `temporal server
// start-dev --search-attribute` and `temporal operator search-attribute
// create --name Name --type Type`.
func SearchAttributeSpecs() []string {
	out := make([]string, len(SearchAttributeKeys))
	for i, k := range SearchAttributeKeys {
		out[i] = k.GetName() + "=" + k.GetValueType().String()
	}
	return out
}

// DevServerFlags are the `temporal server start-dev` flags that register
// SearchAttributeKeys: "--search-attribute", "OrderStatus=Keyword", ….
func DevServerFlags() []string {
	var out []string
	for _, spec := range SearchAttributeSpecs() {
		out = append(out, "--search-attribute", spec)
	}
	return out
}

// CheckSearchAttributes fails, naming what is missing, unless the namespace
// has every search attribute the workflow writes: a workflow upserting an
// unknown attribute would fail its tasks at the first status change.
func CheckSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of namespace %s: %w", namespace, err)
	}
	for _, k := range SearchAttributeKeys {
		name, typ := k.GetName(), k.GetValueType()
		got, ok := resp.GetCustomAttributes()[name]
		if !ok {
			return fmt.Errorf("search attribute %s (%s) is not registered in namespace %s: start the dev server with `make temporal` or run `temporal operator search-attribute create --name %s --type %s`",
				name, typ, namespace, name, typ)
		}
		if got != typ {
			return fmt.Errorf("search attribute %s has type %s, want %s", name, got, typ)
		}
	}
	return nil
}

// EnsureReconcileSchedule creates the Temporal Schedule that runs
// ReconcileWorkflow every interval on taskQueue, unless it exists. Runs
// never overlap: a slow reconcile skips the next tick.
func EnsureReconcileSchedule(ctx context.Context, c client.Client, scheduleID, taskQueue string, every time.Duration) error {
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      scheduleID,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID:        scheduleID + "-run",
			Workflow:  workflows.ReconcileWorkflowName,
			TaskQueue: taskQueue,
		},
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create schedule %s: %w", scheduleID, err)
	}
	return nil
}
