// Command seckill is the flash-sale system a merchant deploys: migrations,
// the HTTP API, the Temporal worker, a one-process dev stack and the
// operator's tools around them. The load test, the drill and the chaos
// soak are the lab's (cmd/seckill-lab), so this binary links none of them.
// Wiring is explicit: main builds every adapter from the environment and
// hands them to the packages that use them.
package main

import (
	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/cli"
)

func main() { cli.Main(rootCmd()) }

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "seckill",
		Short:         "Flash-sale order system: Redis admission, one Temporal workflow per order, MySQL truth",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(migrateCmd(), apiCmd(), workerCmd(), devCmd(), tokenCmd(), reconcileCmd(), refundsCmd(), eventsCmd(), searchAttributesCmd(), sessionCmd(), ordersCmd(), operatorsCmd(), drawCmd(), versionCmd(), keyCmd(), healthcheckCmd())
	return cli.RefuseStrayArgs(root)
}
