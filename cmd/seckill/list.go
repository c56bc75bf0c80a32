package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/mysql"
)

// listCmd is a command that lists rows of MySQL (read by read, at most
// --limit of them; printed by print, as a table or with --json); the
// parked-work commands (refunds, events) are built on it.
func listCmd[S any](use, short string, read func(db *mysql.DB, ctx context.Context, limit int) ([]S, error),
	print func(w io.Writer, states []S, asJSON bool, now time.Time) error) *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd.Context(), func(db *mysql.DB) error {
				states, err := read(db, cmd.Context(), limit)
				if err != nil {
					return err
				}
				return print(cmd.OutOrStdout(), states, asJSON, time.Now())
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	cmd.Flags().IntVar(&limit, "limit", 500, "list at most this many, oldest first")
	return cmd
}

// rowCmd is a command that does one thing in MySQL to the row its one
// argument names (do), then says what it did: done, with the argument.
func rowCmd(use, short string, do func(db *mysql.DB, ctx context.Context, arg string) error, done string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withDB(cmd.Context(), func(db *mysql.DB) error {
				if err := do(db, cmd.Context(), args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), done+"\n", args[0])
				return err
			})
		},
	}
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

// nextAttempt is the "when" of pending work whose next attempt is at: now
// once it is due (or has no time yet), otherwise how long until then.
func nextAttempt(now, at time.Time) string {
	if at.IsZero() || !at.After(now) {
		return "next: now"
	}
	return "next in " + at.Sub(now).Round(time.Second).String()
}

// ago is the "when" of something that happened at t: how long ago, and the
// time itself.
func ago(now, t time.Time) string {
	return now.Sub(t).Round(time.Second).String() + " ago (" + t.UTC().Format(time.RFC3339) + ")"
}
