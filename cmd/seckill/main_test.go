package main

import (
	"bytes"
	"context"
)

// execute runs the binary's command line args in process, as a user's
// shell would, and returns what it printed.
func execute(ctx context.Context, args ...string) (string, error) {
	cmd := rootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}
