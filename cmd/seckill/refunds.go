package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bojanz/currency"
	"github.com/spf13/cobra"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/mysql"
)

// refundsCmd lists the refunds not done and retries a parked one. It needs
// MySQL only: refunds are rows there, and the relay of a running worker
// starts whatever this makes due.
func refundsCmd() *cobra.Command {
	cmd := listCmd("refunds [--json] | refunds retry <payment_id>",
		"List pending and parked refunds (and payments no workflow recorded yet); retry a parked one",
		(*mysql.DB).RefundStates, printRefunds)
	cmd.AddCommand(rowCmd("retry <payment_id>",
		"Make a pending or parked refund due now with a fresh round of attempts (a running worker's relay starts it)",
		(*mysql.DB).RetryRefund, "refund of %s is due now; a running worker's refund relay starts it"))
	return cmd
}

// printRefunds prints refund states as a table (or JSON). The "when"
// column is the next attempt of a pending refund, the parking time of a
// parked one, and the arrival of a received payment.
func printRefunds(w io.Writer, states []seckill.RefundState, asJSON bool, now time.Time) error {
	if asJSON {
		return cli.EncodeList(w, "refunds", states)
	}
	rows := make([]string, len(states))
	for i, s := range states {
		var when string
		switch s.State {
		case seckill.RefundParked:
			when = "parked " + ago(now, s.ParkedAt)
		case seckill.RefundReceived:
			when = "received " + ago(now, s.CreatedAt)
		default:
			when = nextAttempt(now, s.NextAttemptAt)
		}
		amount := fmt.Sprintf("%d.%02d", s.AmountCents/100, s.AmountCents%100)
		if a, err := currency.NewAmountFromInt64(s.AmountCents, strings.ToUpper(s.Currency)); err == nil {
			amount = a.String() // in the currency's own digits: 1999 JPY, 19.99 USD
		}
		rows[i] = fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s\t%s", s.State, s.OrderNo, s.PaymentID,
			amount, s.Attempts, when, s.LastError)
	}
	return cli.WriteTable(w, "no refunds pending", "STATE\tORDER_NO\tPAYMENT_ID\tAMOUNT\tATTEMPTS\tWHEN\tLAST_ERROR", rows)
}
