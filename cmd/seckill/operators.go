package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/mysql"
)

// operatorsCmd manages the admin API's named tokens, one per person or
// script. Like `seckill refunds` it needs MySQL only: the API looks the
// token up there on each admin call, so a revoke holds at once.
func operatorsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "operators",
		Short: "Named API tokens of the admin API, one per operator: add, list, revoke",
	}
	var role string
	add := &cobra.Command{
		Use:   "add NAME --role viewer|operator|admin",
		Short: "Create NAME's token and print it once, as the last word of the output (only its hash is stored)",
		Long: `add creates a named token for the admin API and prints it once: only its
SHA-256 is stored, so it cannot be shown again. Give each person and each
script their own name; the audit records who changed what by it.

A viewer reads; an operator also pauses, resumes, ends, adds stock and
refunds; an admin also creates and changes sessions, the blocklist and the
operators. A name whose token is active must be revoked before it is given
a new one.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := seckill.ParseRole(role)
			if err != nil {
				return err
			}
			return withDB(cmd.Context(), func(db *mysql.DB) error {
				token, err := addOperator(cmd.Context(), db, args[0], r)
				if seckill.ErrorCode(err) == seckill.ECONFLICT {
					// The token is fresh: the conflict is the name.
					return fmt.Errorf("%w (seckill operators revoke %s, then add it again)", err, args[0])
				} else if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "operator %s (%s) created; its token, shown once: %s\n", args[0], r, token)
				return err
			})
		},
	}
	add.Flags().StringVar(&role, "role", "", "what the operator may do: viewer, operator or admin")
	_ = add.MarkFlagRequired("role")

	var asJSON bool
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the operators, active and revoked: name, role, created, last used, revoked",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd.Context(), func(db *mysql.DB) error {
				ops, err := db.Operators(cmd.Context())
				if err != nil {
					return err
				}
				return printOperators(cmd.OutOrStdout(), ops, asJSON, time.Now())
			})
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")

	revoke := rowCmd("revoke NAME",
		"End NAME's token now (a leaked token, a person who left); the name may then be added again",
		(*mysql.DB).RevokeOperator, "operator %s revoked; its token is refused from now on")
	cmd.AddCommand(add, list, revoke)
	return cmd
}

// addOperator makes a token for the operator name and stores its hash; the
// token itself exists only in what it returns.
func addOperator(ctx context.Context, db *mysql.DB, name string, role seckill.Role) (string, error) {
	token, hash, err := seckill.NewOperatorToken()
	if err != nil {
		return "", err
	}
	if err := db.AddOperator(ctx, name, role, hash); err != nil {
		return "", err
	}
	return token, nil
}

// replaceOperator gives the operator name a new token, revoking the one it
// had: what a restart of `seckill dev` does to its own operators, whose
// earlier tokens were printed to a terminal and are gone.
func replaceOperator(ctx context.Context, db *mysql.DB, name string, role seckill.Role) (string, error) {
	if err := db.RevokeOperator(ctx, name); err != nil && seckill.ErrorCode(err) != seckill.ENOTFOUND {
		return "", err
	}
	return addOperator(ctx, db, name, role)
}

// printOperators prints the operators as a table (or JSON).
func printOperators(w io.Writer, ops []seckill.OperatorToken, asJSON bool, now time.Time) error {
	if asJSON {
		return cli.EncodeList(w, "operators", ops)
	}
	rows := make([]string, len(ops))
	for i, o := range ops {
		used, revoked := "never", "-"
		if o.LastUsed != nil {
			used = ago(now, *o.LastUsed)
		}
		if o.RevokedAt != nil {
			revoked = o.RevokedAt.UTC().Format(time.RFC3339)
		}
		rows[i] = fmt.Sprintf("%s\t%s\t%s\t%s\t%s", o.Name, o.Role, o.CreatedAt.UTC().Format(time.RFC3339), used, revoked)
	}
	return cli.WriteTable(w, "no operators: add one with seckill operators add NAME --role viewer|operator|admin",
		"NAME\tROLE\tCREATED\tLAST_USED\tREVOKED", rows)
}
