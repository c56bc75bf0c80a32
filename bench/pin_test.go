package bench

import (
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// The pinning plan finds a process by the port it listens on.
func TestListeningPID(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	pid, err := ListeningPID(ln.Addr().(*net.TCPAddr).Port)
	require.NoError(t, err)
	require.Equal(t, os.Getpid(), pid)

	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	_, err = ListeningPID(port)
	require.ErrorContains(t, err, "nothing listens")
}
