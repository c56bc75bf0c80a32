package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill"
)

// orderReadCmds are customer service's and finance's reads of orders
// (viewer and up): list, show, export. base is the orders command's --api.
func orderReadCmds(base *string) []*cobra.Command {
	var (
		f          seckill.OrderFilter
		status     string
		from, to   string
		cursor     string
		limit      int
		exportSale int64
	)
	list := &cobra.Command{
		Use:   "list [--session N] [--user N] [--status S] [--from T] [--to T] [--limit N] [--cursor C]",
		Short: "List orders newest first, one page (next_cursor, when present, is the next page's --cursor)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Zero is "no filter" to the client: --user 0 (or -42, a typo)
			// would list every order, which customer service could take
			// for the shopper's.
			for name, v := range map[string]int64{"session": f.SessionID, "user": f.UserID, "limit": int64(limit)} {
				if cmd.Flags().Changed(name) && v < 1 {
					return fmt.Errorf("--%s must be a positive integer, got %d", name, v)
				}
			}
			cl, err := adminClient(*base)
			if err != nil {
				return err
			}
			q := f
			q.Status = seckill.Status(strings.ToUpper(status)) // paid reads as PAID
			for _, t := range []struct {
				raw string
				dst *time.Time
			}{{from, &q.From}, {to, &q.To}} {
				if t.raw == "" {
					continue
				}
				if *t.dst, err = time.Parse(time.RFC3339Nano, t.raw); err != nil {
					return fmt.Errorf("--from and --to are RFC 3339 times (2026-01-02T15:04:05Z): %w", err)
				}
			}
			page, err := cl.FindOrders(cmd.Context(), q, cursor, limit)
			if err != nil {
				return err
			}
			return printJSON(cmd, page)
		},
	}
	lf := list.Flags()
	lf.Int64Var(&f.SessionID, "session", 0, "only this sale's orders")
	lf.Int64Var(&f.UserID, "user", 0, "only this shopper's orders")
	lf.StringVar(&status, "status", "", "only orders in this status (WAIT_PAY, PAID, CLOSED, …; any case)")
	lf.StringVar(&from, "from", "", "created at or after this time (RFC 3339)")
	lf.StringVar(&to, "to", "", "created before this time (RFC 3339)")
	lf.IntVar(&limit, "limit", 0, "orders per page (the API's default when 0)")
	lf.StringVar(&cursor, "cursor", "", "the next_cursor of the previous page")

	show := &cobra.Command{
		Use:   "show <order_no>",
		Short: "Show an order with its status history, payments, refunds, events and its workflow's link",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := adminClient(*base)
			if err != nil {
				return err
			}
			rec, err := cl.OrderRecord(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, rec)
		},
	}

	export := &cobra.Command{
		Use:   "export --session N > orders.csv",
		Short: "Write a sale's orders as CSV (a header row, one row per order) to stdout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if exportSale < 1 {
				return fmt.Errorf("--session is required")
			}
			cl, err := adminClient(*base)
			if err != nil {
				return err
			}
			return cl.ExportOrders(cmd.Context(), exportSale, cmd.OutOrStdout())
		},
	}
	export.Flags().Int64Var(&exportSale, "session", 0, "the sale whose orders are exported")
	return []*cobra.Command{list, show, export}
}
