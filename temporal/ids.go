package temporal

import (
	"fmt"
	"strconv"
)

// WorkflowID is the Temporal workflow id of an order: one per order number,
// so a second start of the same order is detected, never doubled.
func WorkflowID(orderNo string) string { return fmt.Sprintf("order:%s", orderNo) }

// RefundWorkflowID is the Temporal workflow id of a payment's refund: one
// per payment, so a refund is never started twice.
func RefundWorkflowID(paymentID string) string { return "refund:" + paymentID }

// SessionWorkflowID is the Temporal workflow id of a session's life (its
// preheat before the start, its retirement after the end): one per session
// of a deployment. Session ids are a database's auto-increment, so the id
// is qualified by the deployment's task queue: two deployments (or test
// databases) on one Temporal namespace each have a session 1.
func SessionWorkflowID(taskQueue string, sessionID int64) string {
	return "session:" + taskQueue + ":" + strconv.FormatInt(sessionID, 10)
}
