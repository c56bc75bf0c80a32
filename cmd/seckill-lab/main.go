// Command seckill-lab is the lab around seckill, never deployed with it:
// the load test (bench), the fault rehearsal against a running stack
// (drill), the randomized fault soak on a stack of its own (chaos) and the
// counts of what an admission and an order cost the servers (capacity). It
// reads the same configuration as seckill (internal/app); chaos runs the
// API and the worker from the seckill binary (--seckill-bin).
package main

import (
	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/cli"
)

func main() { cli.Main(rootCmd()) }

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "seckill-lab",
		Short:         "seckill's lab: load test, fault rehearsal, fault soak and capacity counts of a seckill stack",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(benchCmd(), drillCmd(), chaosCmd(), capacityCmd())
	return cli.RefuseStrayArgs(root)
}
