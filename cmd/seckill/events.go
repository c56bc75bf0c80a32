package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/mysql"
)

// eventsCmd lists the order events not delivered and retries parked ones.
// Like `seckill refunds` it needs MySQL only: the relay of a running
// worker sends whatever this makes due.
func eventsCmd() *cobra.Command {
	cmd := listCmd("events [--json] | events retry [EVENT_ID...] [--all-parked]",
		"List the order events not delivered to SECKILL_EVENTS_URL (pending, parked); retry parked ones",
		(*mysql.DB).EventStates, printEvents)
	var allParked bool
	retry := &cobra.Command{
		Use:   "retry [EVENT_ID...] [--all-parked]",
		Args:  cobra.ArbitraryArgs, // checked against --all-parked below
		Short: "Make undelivered events due now with a fresh round of attempts (a running worker's relay sends them)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if allParked == (len(args) > 0) {
				return errors.New("name the events to retry, or pass --all-parked")
			}
			return withDB(cmd.Context(), func(db *mysql.DB) error {
				out := cmd.OutOrStdout()
				if allParked {
					n, err := db.RetryParkedEvents(cmd.Context())
					if err != nil {
						return err
					}
					said := fmt.Sprintf("%d parked events are due now; a running worker's events relay sends them", n)
					if n == 1 {
						said = "1 parked event is due now; a running worker's events relay sends it"
					}
					_, err = fmt.Fprintln(out, said)
					return err
				}
				for _, id := range args {
					if err := db.RetryEvent(cmd.Context(), id); err != nil {
						return err
					}
					fmt.Fprintf(out, "event %s is due now; a running worker's events relay sends it\n", id)
				}
				return nil
			})
		},
	}
	retry.Flags().BoolVar(&allParked, "all-parked", false, "retry every parked event")
	cmd.AddCommand(retry)
	return cmd
}

// printEvents prints event states as a table (or JSON). The "when" column
// is the next attempt of a pending event (one behind an earlier event of
// its order waits for that one too) and the parking time of a parked one.
func printEvents(w io.Writer, states []seckill.EventState, asJSON bool, now time.Time) error {
	if asJSON {
		type listed struct {
			seckill.EventState
			OrderNo string `json:"order_no"`
		}
		out := make([]listed, len(states))
		for i, s := range states {
			out[i] = listed{s, s.OrderNo}
		}
		return cli.EncodeList(w, "events", out)
	}
	rows := make([]string, len(states))
	for i, s := range states {
		var when string
		switch {
		case s.State == seckill.EventParked:
			when = "parked " + ago(now, s.ParkedAt)
		default:
			when = nextAttempt(now, s.NextAttemptAt)
		}
		rows[i] = fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s\t%s", s.State, s.ID, s.Type, s.OrderNo, s.Attempts, when, s.LastError)
	}
	return cli.WriteTable(w, "no events waiting for delivery", "STATE\tEVENT_ID\tTYPE\tORDER_NO\tATTEMPTS\tWHEN\tLAST_ERROR", rows)
}
