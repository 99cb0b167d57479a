package retry

import (
	"context"
	"errors"

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
		errors.Is(err, zk.ErrNoServer)
}
