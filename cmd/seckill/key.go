package main

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

// keyCmd prints what a purchase's Idempotency-Key should be: a UUIDv7,
// stamped with the current time (the admission's pin rule reads the stamp),
// with no other tool needed (uuidgen --time-v7 and Python's uuid7 are
// missing on many systems).
func keyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "key",
		Short: "Print a fresh UUIDv7, one purchase's Idempotency-Key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := uuid.NewV7()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), k)
			return err
		},
	}
}
