package seckill

// Every change of an order's status after its creation is decided here,
// as a Transition from the status it has: the stores persist a decision
// under the order row's lock (a compare-and-set from From, its ledger row,
// its units back when it gives them back); they do not make it.

// Reasons recorded on an order and its ledger row by its transitions.
const (
	ReasonPaid           = "paid"
	ReasonLatePayment    = "late_payment"
	ReasonOperatorRefund = "operator_refund"
	ReasonRefunded       = "refunded"
)

// Transition is one change of an order's status.
type Transition struct {
	From, To Status
	// Reason is recorded on the order and its ledger row.
	Reason string
	// GivesBack: the order's units go back to the session's stock and its
	// shopper's slots are freed.
	GivesBack bool
}

// Pay is what a captured payment does to an order in status s; exact
// tells whether it is the order's amount in its currency (Payment.Pays).
// WAIT_PAY: PAID, the payment is the order's one payment. CLOSED: a late
// payment; the order is never reopened and waits as REFUND_PENDING for the
// payment's refund. Any other status (paid by another payment, FAILED,
// refunding), or a payment that is not exact: the order stays as it is
// (nil) and the payment, captured all the same, waits for its refund.
func (s Status) Pay(exact bool) (PaymentOutcome, *Transition) {
	switch {
	case s == StatusWaitPay && exact:
		return PaymentCaptured, &Transition{From: s, To: StatusPaid, Reason: ReasonPaid}
	case s == StatusClosed:
		return PaymentRefundPending, &Transition{From: s, To: StatusRefundPending, Reason: ReasonLatePayment}
	}
	return PaymentRefundPending, nil
}

// Close is the compensation of an order in status s: an unpaid order
// (WAIT_PAY) closes for reason and gives its units back; any other
// (closed already, paid, failed) stays as it is (nil): a close that lost
// the race to a payment changes nothing.
func (s Status) Close(reason string) *Transition {
	if s != StatusWaitPay {
		return nil
	}
	return &Transition{From: s, To: StatusClosed, Reason: reason, GivesBack: true}
}

// OperatorRefund is an operator's refund of order orderNo in status s:
// only a PAID order is refunded, once; it waits as REFUND_PENDING for the
// provider and its units go back (the unit is not sold any more). Any
// other status is a CONFLICT.
func (s Status) OperatorRefund(orderNo string) (*Transition, error) {
	switch s {
	case StatusPaid:
		return &Transition{From: s, To: StatusRefundPending, Reason: ReasonOperatorRefund, GivesBack: true}, nil
	case StatusRefundPending, StatusRefunded:
		return nil, Errorf(ECONFLICT, "order %s is %s: its money goes back already, and an order is refunded once", orderNo, s)
	}
	return nil, Errorf(ECONFLICT, "order %s is %s: only a PAID order can be refunded", orderNo, s)
}

// Refunded is what the last refund of an order's payments does to it: a
// REFUND_PENDING order is REFUNDED; any other (a PAID order whose
// duplicate payment was refunded) stays as it is (nil).
func (s Status) Refunded() *Transition {
	if s != StatusRefundPending {
		return nil
	}
	return &Transition{From: s, To: StatusRefunded, Reason: ReasonRefunded}
}
