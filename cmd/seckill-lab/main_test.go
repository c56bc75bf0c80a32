package main

import (
	"strings"
	"testing"
)

// Bad flags are refused before the lab touches a server.
func TestCapacityRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--orders", "0"}, {"--pay-timeout", "0s"}} {
		cmd := rootCmd()
		cmd.SetArgs(append([]string{"capacity"}, args...))
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "must be positive") {
			t.Errorf("capacity %v: want a refusal, got %v", args, err)
		}
	}
}
