package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/worker"
)

// searchAttributesCmd prints the search attributes the workflows write, one
// "Name=Type" a line (worker.SearchAttributeKeys, the one list):
// scripts/temporal-dev.sh registers what it prints, so the script never
// spells them itself. Needs no configuration and no service.
func searchAttributesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "search-attributes",
		Short: "Print the Temporal search attributes seckill needs, one Name=Type a line (for the dev server's --search-attribute)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, spec := range worker.SearchAttributeSpecs() {
				if _, err := fmt.Fprintln(cmd.OutOrStdout(), spec); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
