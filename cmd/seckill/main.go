// Command seckill is the one binary of the flash-sale system: migrations,
// the HTTP API, the Temporal worker, a one-process dev stack and the tools
// around them. Wiring is explicit: main builds every adapter from the
// environment and hands them to the packages that use them.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := rootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
		os.Exit(exitCode(err))
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "seckill",
		Short:         "Flash-sale order system: Redis admission, one Temporal workflow per order, MySQL truth",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(migrateCmd(), apiCmd(), workerCmd(), devCmd(), tokenCmd(), reconcileCmd(), refundsCmd(), eventsCmd(), drillCmd(), chaosCmd(), benchCmd(), searchAttributesCmd(), sessionCmd(), ordersCmd(), operatorsCmd(), drawCmd(), versionCmd(), healthcheckCmd())
	return root
}

// exitError carries a specific exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func exitCode(err error) int {
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	return 1
}
