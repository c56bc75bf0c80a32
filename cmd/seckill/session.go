package main

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/cli"
)

// sessionCmd is the operator's controls of a running sale, through the
// admin API (so that the API that answers also clears its caches at once;
// the others follow within a second). Each change is in the session's
// audit ledger under the operator of the token; --request-id makes a
// retry apply once.
func sessionCmd() *cobra.Command {
	var (
		base string
		opts client.ChangeOptions
	)
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Create and operate a sale through the admin API: create, pause, resume, end, add-stock, update, audit",
		Long: `session changes a running or upcoming sale through the admin API of a
running stack (--api, SECKILL_OPERATOR_TOKEN or SECKILL_ADMIN_TOKEN) and prints
the answer as JSON. Every change is recorded in the session's audit ledger
under the token's operator and role, with the caller's address; give --request-id to make a retry safe (the same id is
applied once), and retry add-stock with it after an UNAVAILABLE answer.`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&base, "api", "http://127.0.0.1:8080", "base URL of the running API")
	f.StringVar(&opts.RequestID, "request-id", "", "idempotency key of the change: a retry with the same id applies it once")

	admin := func() (*client.Client, error) { return adminClient(base) }
	sessionArg := func(args []string) (int64, error) {
		id, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || id <= 0 {
			return 0, fmt.Errorf("session id must be a positive integer, not %q", args[0])
		}
		return id, nil
	}
	verb := func(use, short string, do func(cmd *cobra.Command, cl *client.Client, id int64, args []string) (any, error)) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short, Args: cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				id, err := sessionArg(args)
				if err != nil {
					return err
				}
				cl, err := admin()
				if err != nil {
					return err
				}
				out, err := do(cmd, cl, id, args)
				if err != nil {
					return err
				}
				return printJSON(cmd, out)
			},
		}
	}
	var sku int64
	addStock := verb("add-stock <session> <units> [--sku N]", "Add units to the sale (to item --sku of a sale of several) in MySQL and Redis; the sold-out flag lifts",
		func(cmd *cobra.Command, cl *client.Client, id int64, args []string) (any, error) {
			if len(args) != 2 {
				return nil, errors.New("usage: seckill session add-stock <session> <units> [--sku N]")
			}
			n, err := strconv.Atoi(args[1])
			if err != nil {
				return nil, fmt.Errorf("units must be an integer, not %q", args[1])
			}
			return cl.AddItemStock(cmd.Context(), id, sku, n, opts)
		})
	addStock.Flags().Int64Var(&sku, "sku", 0, "the item that gets the units, in a sale of several items")
	cmd.AddCommand(
		verb("pause <session>", "Stop new orders (423 PAUSED on every API within a second); payments and timeouts go on",
			func(cmd *cobra.Command, cl *client.Client, id int64, _ []string) (any, error) {
				return cl.PauseSession(cmd.Context(), id, opts)
			}),
		verb("resume <session>", "Let orders in again after a pause",
			func(cmd *cobra.Command, cl *client.Client, id int64, _ []string) (any, error) {
				return cl.ResumeSession(cmd.Context(), id, opts)
			}),
		verb("end <session>", "End the sale now (410 ENDED from then on)",
			func(cmd *cobra.Command, cl *client.Client, id int64, _ []string) (any, error) {
				return cl.EndSession(cmd.Context(), id, opts)
			}),
		addStock,
		updateCmd(verb, &opts),
		createCmd(admin),
		verb("audit <session>", "Print the session's audit ledger, oldest first",
			func(cmd *cobra.Command, cl *client.Client, id int64, _ []string) (any, error) {
				return cl.SessionAudit(cmd.Context(), id)
			}),
	)
	return cmd
}

// adminClient is the admin API of the running stack at base, as the
// operator of SECKILL_OPERATOR_TOKEN (a named token, the audit's "who"),
// else as the bootstrap admin of SECKILL_ADMIN_TOKEN.
func adminClient(base string) (*client.Client, error) {
	c, err := cli.LoadConfig()
	if err != nil {
		return nil, err
	}
	tok := cmp.Or(c.OperatorToken, c.BootstrapToken())
	if tok == "" {
		return nil, errors.New("set SECKILL_OPERATOR_TOKEN (your token from `seckill operators add`) or SECKILL_ADMIN_TOKEN")
	}
	cl := client.New(base)
	cl.AdminToken = tok
	return cl, nil
}

// printJSON writes v to the command's output as indented JSON.
func printJSON(cmd *cobra.Command, v any) error {
	return cli.EncodeJSON(cmd.OutOrStdout(), v)
}

// updateCmd is `seckill session update`: only the flags given change.
func updateCmd(verb func(string, string, func(*cobra.Command, *client.Client, int64, []string) (any, error)) *cobra.Command, opts *client.ChangeOptions) *cobra.Command {
	var (
		title, mode     string
		price, limit    int64
		ttl             int
		start, end      string
		regFrom, regTil string
	)
	cmd := verb("update <session> [--title T] [--price-cents N] [--per-user-limit N] [--start-at T] [--end-at T] [--mode M] [--register-from T] [--register-until T] [--right-ttl-seconds N]",
		"Change a session that has not started (times in RFC 3339)",
		func(cmd *cobra.Command, cl *client.Client, id int64, _ []string) (any, error) {
			u := &seckill.SessionUpdate{}
			fl := cmd.Flags()
			if fl.Changed("title") {
				u.Title = &title
			}
			if fl.Changed("price-cents") {
				u.PriceCents = &price
			}
			if fl.Changed("per-user-limit") {
				n := int(limit)
				u.PerUserLimit = &n
			}
			if fl.Changed("mode") {
				m := seckill.SessionMode(mode)
				u.Mode = &m
			}
			if fl.Changed("right-ttl-seconds") {
				u.RightTTLSeconds = &ttl
			}
			for _, t := range []struct {
				flag, raw string
				to        **time.Time
			}{{"start-at", start, &u.StartAt}, {"end-at", end, &u.EndAt}, {"register-from", regFrom, &u.RegisterFrom}, {"register-until", regTil, &u.RegisterUntil}} {
				if !fl.Changed(t.flag) {
					continue
				}
				v, err := time.Parse(time.RFC3339, t.raw)
				if err != nil {
					return nil, fmt.Errorf("--%s must be an RFC 3339 time: %v", t.flag, err)
				}
				*t.to = &v
			}
			if u.Empty() {
				return nil, errors.New("nothing to change: give --title, --price-cents, --per-user-limit, --start-at, --end-at, --mode, --register-from, --register-until or --right-ttl-seconds")
			}
			return cl.UpdateSession(cmd.Context(), id, u, *opts)
		})
	f := cmd.Flags()
	f.StringVar(&title, "title", "", "new title")
	f.Int64Var(&price, "price-cents", 0, "new price in cents")
	f.Int64Var(&limit, "per-user-limit", 0, "new per-user limit")
	f.StringVar(&start, "start-at", "", "new start (RFC 3339)")
	f.StringVar(&end, "end-at", "", "new end (RFC 3339)")
	f.StringVar(&mode, "mode", "", "new mode: first_come, reserved or draw (before registration opens)")
	f.StringVar(&regFrom, "register-from", "", "new opening of registration (RFC 3339; before it opens)")
	f.StringVar(&regTil, "register-until", "", "new close of registration (RFC 3339; before it opens)")
	f.IntVar(&ttl, "right-ttl-seconds", 0, "new duration of a draw's rights")
	return cmd
}
