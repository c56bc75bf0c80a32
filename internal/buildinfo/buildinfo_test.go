package buildinfo

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// What the linker stamps wins; every field says something, even in a
// build nobody stamped (go test's, here).
func TestRead(t *testing.T) {
	info := read()
	require.Equal(t, runtime.Version(), info.GoVersion)
	for _, f := range []string{info.Version, info.Commit, info.BuildTime} {
		require.NotEmpty(t, f)
	}

	version, commit, buildTime = "v1.2.3", "abc123", "2026-12-04T00:00:00Z"
	t.Cleanup(func() { version, commit, buildTime = "", "", "" })
	require.Equal(t, Info{Version: "v1.2.3", Commit: "abc123", BuildTime: "2026-12-04T00:00:00Z", GoVersion: runtime.Version()}, read())
}
