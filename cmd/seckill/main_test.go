package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
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

// A word a command does not take is refused before it runs, not dropped:
// `reconcile --session 3 4` is a typo, not a reconcile of session 3.
// Commands that take words still take them.
func TestStrayArgumentsAreRefused(t *testing.T) {
	for _, args := range [][]string{{"key", "x"}, {"version", "x"}, {"reconcile", "--session", "3", "4"},
		{"migrate", "now"}, {"orders", "list", "42"}, {"refunds", "all"}} {
		_, err := execute(context.Background(), args...)
		require.ErrorContains(t, err, fmt.Sprintf("unknown command %q", args[len(args)-1]), "%v", args)
	}
	root := rootCmd()
	for _, path := range [][]string{{"events", "retry"}, {"orders", "show"}, {"session", "pause"}} {
		c, rest, err := root.Find(path)
		require.NoError(t, err)
		require.Empty(t, rest)
		require.NoError(t, c.Args(c, []string{"7"}), "%v takes a word", path)
	}
}
