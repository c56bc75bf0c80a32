package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/client"
)

// ordersCmd is what operators do with orders through the admin API: read
// them (list, show, export) and refund a paid one.
func ordersCmd() *cobra.Command {
	var (
		base   string
		reason string
		opts   client.ChangeOptions
	)
	cmd := &cobra.Command{
		Use:   "orders",
		Short: "Orders through the admin API: list, show, export (viewer), refund (operator)",
	}
	refund := &cobra.Command{
		Use:   "refund <order_no> --reason R",
		Short: "Refund a PAID order: REFUND_PENDING now, REFUNDED once the provider gave the money back",
		Long: `refund gives a PAID order its money back through the payment provider (a
customer-service cancellation) and its units back to the sale. The order is
REFUND_PENDING at once and REFUNDED once the provider confirmed; a refund the
provider refuses is retried and parked like the others (seckill refunds).
The change is in the session's audit ledger under the token's operator, with
--reason.

The request id defaults to "refund:<order_no>": running the command again
answers the first refund (applied: false) and never sends a second one.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if reason == "" {
				return errors.New("--reason is required: it is kept in the audit ledger")
			}
			cl, err := adminClient(base)
			if err != nil {
				return err
			}
			o := opts
			if o.RequestID == "" {
				o.RequestID = "refund:" + args[0]
			}
			out, err := cl.RefundOrder(cmd.Context(), args[0], reason, o)
			if err != nil {
				return err
			}
			return printJSON(cmd, out)
		},
	}
	refund.Flags().StringVar(&reason, "reason", "", "why the order is refunded (kept in the audit ledger)")
	refund.Flags().StringVar(&opts.RequestID, "request-id", "", `idempotency key of the refund (default "refund:<order_no>")`)
	cmd.PersistentFlags().StringVar(&base, "api", "http://127.0.0.1:8080", "base URL of the running API")
	cmd.AddCommand(refund)
	cmd.AddCommand(orderReadCmds(&base)...)
	return cmd
}
