package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/mysql"
)

// refundsCmd lists the refunds not done and retries a parked one. It needs
// MySQL only: refunds are rows there, and the relay of a running worker
// starts whatever this makes due.
func refundsCmd() *cobra.Command {
	cmd := listCmd("refunds [--json] | refunds retry <payment_id>",
		"List pending and parked refunds (and payments no workflow recorded yet); retry a parked one",
		func(ctx context.Context, db *mysql.DB, w io.Writer, limit int, asJSON bool) error {
			states, err := db.RefundStates(ctx, limit)
			if err != nil {
				return err
			}
			return printRefunds(w, states, asJSON, time.Now())
		})
	cmd.AddCommand(&cobra.Command{
		Use:   "retry <payment_id>",
		Short: "Make a pending or parked refund due now with a fresh round of attempts (a running worker's relay starts it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withDB(cmd.Context(), func(db *mysql.DB) error {
				if err := db.RetryRefund(cmd.Context(), args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "refund of %s is due now; a running worker's refund relay starts it\n", args[0])
				return err
			})
		},
	})
	return cmd
}

// listCmd is a command that lists rows of MySQL (printed by list, as a
// table or with --json, at most --limit of them); the parked-work
// commands (refunds, events) are built on it.
func listCmd(use, short string, list func(ctx context.Context, db *mysql.DB, w io.Writer, limit int, asJSON bool) error) *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd.Context(), func(db *mysql.DB) error {
				return list(cmd.Context(), db, cmd.OutOrStdout(), limit, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	cmd.Flags().IntVar(&limit, "limit", 500, "list at most this many, oldest first")
	return cmd
}

// withDB loads the configuration and runs fn with MySQL.
func withDB(ctx context.Context, fn func(db *mysql.DB) error) error {
	c, err := app.LoadConfig()
	if err != nil {
		return err
	}
	m, err := app.ConnectMySQL(ctx, c)
	if err != nil {
		return err
	}
	defer m.Close()
	return fn(m.DB)
}

// printRefunds prints refund states as a table (or JSON). The "when"
// column is the next attempt of a pending refund, the parking time of a
// parked one, and the arrival of a received payment.
func printRefunds(w io.Writer, states []seckill.RefundState, asJSON bool, now time.Time) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if states == nil {
			states = []seckill.RefundState{}
		}
		return enc.Encode(map[string]any{"refunds": states})
	}
	if len(states) == 0 {
		_, err := fmt.Fprintln(w, "no refunds pending")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tORDER_NO\tPAYMENT_ID\tAMOUNT\tATTEMPTS\tWHEN\tLAST_ERROR")
	for _, s := range states {
		var when string
		switch s.State {
		case seckill.RefundParked:
			when = "parked " + ago(now, s.ParkedAt)
		case seckill.RefundReceived:
			when = "received " + ago(now, s.CreatedAt)
		default:
			if s.NextAttemptAt.IsZero() || !s.NextAttemptAt.After(now) {
				when = "next: now"
			} else {
				when = "next in " + s.NextAttemptAt.Sub(now).Round(time.Second).String()
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d.%02d\t%d\t%s\t%s\n", s.State, s.OrderNo, s.PaymentID,
			s.AmountCents/100, s.AmountCents%100, s.Attempts, when, s.LastError)
	}
	return tw.Flush()
}

func ago(now, t time.Time) string {
	return now.Sub(t).Round(time.Second).String() + " ago (" + t.UTC().Format(time.RFC3339) + ")"
}
