package retry

import (
	"context"
	"errors"
	"net"
	"syscall"

	"github.com/go-zookeeper/zk"
)

// Retryable reports whether err is worth another attempt of the same
// operation on the same session. It is the default classifier of [Do].
//
// The first error in err's chain (as errors.As walks it) that has a method
// Retryable() bool decides; this lets other packages mark their own errors,
// such as operation timeouts, without importing this one, and lets a wrapper
// veto retries of what it wraps. Failing that, these are retryable, because
// the client reconnects by itself and the operation can simply be re-sent:
//
//   - zk.ErrConnectionClosed
//   - zk.ErrSessionMoved
//   - zk.ErrNoServer
//   - the socket's error for a request that could not be written (a
//     broken pipe, a reset, a closed socket): go-zookeeper returns it as
//     is, and the server never got the whole request
//
// Everything else is not, notably nil, context.Canceled and
// context.DeadlineExceeded (the caller gave up) and zk.ErrSessionExpired: a new
// session has lost the ephemeral nodes and watches of the old one, so only the
// caller can tell whether carrying on is still correct.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	if errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, zk.ErrSessionExpired) {
		return false
	}
	return errors.Is(err, zk.ErrConnectionClosed) ||
		errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, zk.ErrNoServer) ||
		unwritten(err)
}

// unwritten reports whether err is the socket's own error for a request
// go-zookeeper could not write (it hands the write's error to that request
// as is, not as zk.ErrConnectionClosed): broken pipe, reset, or a socket
// already closed. A write that fails has not put the whole request on the
// wire, so the server cannot have applied it.
func unwritten(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "write" {
		return true
	}
	return errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}
