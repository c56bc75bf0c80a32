// Package cli is what seckill's two binaries share on the command line:
// the product's (cmd/seckill) and the lab's (cmd/seckill-lab, the bench,
// the drill and the chaos soak). It runs a root command to its exit
// status, loads the configuration a command starts from, and prints what
// --json and the listings print.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/app"
)

// Main runs root until it returns or SIGINT/SIGTERM cancels its context,
// and exits with its status: 0, an ExitError's code, or 1 with the error
// printed after the binary's name.
func Main(root *cobra.Command) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, root.Name()+":", err)
		os.Exit(ExitCode(err))
	}
}

// RefuseStrayArgs makes every command under root that runs and declares
// no arguments refuse them, and returns root: cobra lets a command without
// Args take any, so `seckill reconcile --session 3 4` would reconcile
// session 3 and drop the 4 unsaid. A command that takes arguments says
// how many.
func RefuseStrayArgs(root *cobra.Command) *cobra.Command {
	if root.Args == nil && root.Runnable() {
		root.Args = cobra.NoArgs
	}
	for _, sub := range root.Commands() {
		RefuseStrayArgs(sub)
	}
	return root
}

// ExitError carries a specific exit status out of a command (2: a report
// that found problems), so a script can tell a finding from a failure.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

// ExitCode is the status Main exits with for err.
func ExitCode(err error) int {
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return 1
}

// AllSecrets are the secrets the long-running commands refuse to start
// without, and that the lab's commands need to act as the stack's shoppers,
// payment provider and operator.
var AllSecrets = []string{"SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_SECRET", "SECKILL_ADMIN_TOKEN"}

// LoadConfig loads the configuration and checks that the secrets are set.
func LoadConfig(secrets ...string) (*app.Config, error) {
	c, err := app.LoadConfig()
	if err != nil {
		return nil, err
	}
	if err := c.RequireSecrets(secrets...); err != nil {
		return nil, err
	}
	return c, nil
}
