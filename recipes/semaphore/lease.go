package semaphore

import (
	"context"
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/internal/hold"
)

// Lease is one lease of a Semaphore: a handle that any goroutine may Close.
// It carries the lease's fencing token (Token) and the signal that it can no
// longer be trusted (Done, Err, Context).
type Lease struct {
	sem    *Semaphore
	hold   *hold.Node
	closed atomic.Bool
}

// Token is the fencing token: the czxid of the lease's node. It grows with
// every lease granted on the ensemble, even if the semaphore's directories
// are deleted and made again. Hand it to every resource the lease protects
// and have them refuse tokens lower than the highest seen, where that order
// makes sense (with several leases at once, tokens order grants, not
// exclusive holders).
func (l *Lease) Token() int64 { return l.hold.Token() }

// Path is the lease's node: path/leases/_c_<uuid>-lease-<seq>.
func (l *Lease) Path() string { return l.hold.Path() }

// SessionID is the session that owns the lease's node.
func (l *Lease) SessionID() int64 { return l.hold.SessionID() }

// Done is closed when the lease can no longer be trusted: on Suspended
// under the client's standard error policy, on Lost under the session-only
// policy, and on Close. Under the standard policy it closes before the
// server can expire the session, and so before anyone else can be granted
// the lease.
func (l *Lease) Done() <-chan struct{} { return l.hold.Done() }

// Err is nil while the lease is trusted, then says why it is not:
// ErrSuspended, ErrSessionLost, ErrNodeDeleted or ErrReleased.
func (l *Lease) Err() error { return l.hold.Err() }

// Context returns a context, derived from parent, that is cancelled when the
// lease ends, with Err as its cause: run the protected work under it. Cancel
// parent to free the context's goroutine early.
func (l *Lease) Context(parent context.Context) context.Context { return l.hold.Context(parent) }

// Close returns the lease: its node is deleted, and Close returns once the
// delete is on its way to the server, which applies it before anything this
// client sends afterwards (if the server cannot be reached, the client goes
// on deleting in the background: Client.Drain waits for it). Any goroutine
// may call it.
//
// If the lease was lost before (see Err), Close still deletes the node if
// the session that owns it is alive, and returns an error wrapping
// ErrLeaseLost. A second Close does nothing and returns ErrReleased.
func (l *Lease) Close() error {
	if l.closed.Load() {
		return ErrReleased
	}
	l.sem.forget(l)
	return l.close()
}

// Release is Close: every hold of this library, mutex holds and leases
// alike, is given back with Release.
func (l *Lease) Release() error { return l.Close() }

// close releases the hold once; a lease closed already reports ErrReleased.
func (l *Lease) close() error {
	if l.closed.Swap(true) {
		return ErrReleased
	}
	return l.hold.Release()
}
