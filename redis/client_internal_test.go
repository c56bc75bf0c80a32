package redis

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A cluster node's failure after the command may have reached Redis is
// hidden from go-redis's cluster loop (which would send it again), and
// still retryable by the gate's own retry; a failed dial (nothing sent)
// and Redis's answers pass unchanged.
func TestHideLoss(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, err := range []error{timeout, reset, io.EOF} {
		hidden := hideLoss(err)
		var lost *replyLost
		require.ErrorAs(t, hidden, &lost, "%v", err)
		require.False(t, errors.Is(hidden, io.EOF), "go-redis must not see through it")
		var ne net.Error
		require.False(t, errors.As(hidden, &ne))
		require.Equal(t, err.Error(), hidden.Error())
		require.True(t, retryable(hidden), "the gate still retries its idempotent commands")
	}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	require.Same(t, error(dial), hideLoss(dial), "nothing was sent: go-redis may try another node")
	answer := errors.New("ERR wrong number of arguments")
	require.Same(t, answer, hideLoss(answer))
	require.Nil(t, hideLoss(nil))
}
