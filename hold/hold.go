// Package hold is the one handle every recipe of this module hands out for
// one acquisition, and the errors they share: a mutex hold
// (recipes/mutex), a read or write hold (recipes/rwlock), a semaphore lease
// (recipes/semaphore) and a term of leadership (recipes/leader) are all a
// *Hold, with the same methods meaning the same thing.
//
// The rules every recipe keeps:
//   - every successful Acquire or TryAcquire returns a Hold of its own;
//   - Release gives back exactly that acquisition, once: a second Release
//     returns ErrReleased, never panics and never releases another
//     acquisition; after the recipe's Close gave the hold back, Release
//     returns an error matching both ErrReleased and ErrClosed;
//   - Done closes, and Err says why, the moment the hold can no longer be
//     trusted: the link is in doubt (ErrSuspended, under the client's
//     standard error policy), the session is gone (ErrSessionLost), or its
//     node was deleted or re-created by someone else (ErrNodeDeleted), or
//     its lease time ran out (ErrLeaseExpired, with WithLeaseTime); under
//     the standard policy this happens before the server can expire the
//     session, and so before anyone else can be granted the lock; Release
//     ends it too (ErrReleased); a hold that ended in doubt says
//     ErrSessionLost as well once its session is known lost;
//   - no acquire ever returns a Hold whose signal has already fired: a
//     reentrant acquire of a lost hold returns an error wrapping
//     ErrHoldLost instead;
//   - Release of a hold that was lost still cleans up (the node is deleted
//     while its session lives) and returns an error wrapping ErrHoldLost:
//     whatever the holder did after Done fired was unprotected.
//
// Hand Token, the fencing token, to every resource the hold protects, and
// have it refuse tokens lower than the highest it has seen.
package hold

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errs"
	ihold "github.com/zkrecipes/zkrecipes/internal/hold"
)

// The errors every recipe shares. Each recipe package re-exports the ones
// it returns under the same names (mutex.ErrHoldLost is ErrHoldLost), so
// errors.Is matches either.
var (
	// ErrSuspended: the link to ZooKeeper dropped while held (standard
	// error policy). The session may still be alive, but nothing proves
	// the hold any more.
	ErrSuspended = errs.ErrSuspended
	// ErrSessionLost: the session that held it is gone; so is the hold.
	ErrSessionLost = errs.ErrSessionLost
	// ErrNodeDeleted: the hold's node was deleted, or replaced by a node of
	// another session, by someone other than the holder (an operator, a
	// misbehaving client). Others may be granted the lock already.
	ErrNodeDeleted = errs.ErrNodeDeleted
	// ErrReleased: the hold was released; a second Release returns it.
	ErrReleased = errs.ErrReleased
	// ErrHoldLost: the hold stopped being trusted before Release; Err says
	// why. Anything done after that moment was unprotected.
	ErrHoldLost = errs.ErrHoldLost
	// ErrLeaseExpired: the hold's lease time (a recipe's WithLeaseTime)
	// ran out before Release: its node is being deleted (at once, or once
	// the link is back if it is down), and others may hold the lock
	// already.
	ErrLeaseExpired = errs.ErrLeaseExpired
	// ErrNoLeaseTime: Extend of a hold acquired without a lease time.
	ErrNoLeaseTime = errs.ErrNoLeaseTime
	// ErrClosed: the recipe (or its client) was closed.
	ErrClosed = errs.ErrClosed
	// ErrWouldBlock: a TryAcquire found the lock held (or the leases
	// taken).
	ErrWouldBlock = errs.ErrWouldBlock
	// ErrNotOwner: a goroutine released a reentrant lock that another
	// goroutine holds.
	ErrNotOwner = errs.ErrNotOwner
	// ErrNotHeld: a reentrant lock was released more times than acquired.
	ErrNotHeld = errs.ErrNotHeld
	// ErrInvalidOption: an option was given a value it cannot take, or
	// given to a recipe it does not apply to.
	ErrInvalidOption = errs.ErrInvalidOption
	// ErrNilClient: a constructor was given no client.
	ErrNilClient = errs.ErrNilClient
	// ErrOutcomeUnknown: a fenced write's reply was lost (the link dropped,
	// the client closed, or the context ended while it was on its way):
	// it may or may not have been applied, all of it or none. It is
	// framework.ErrOutcomeUnknown.
	ErrOutcomeUnknown = ihold.ErrOutcomeUnknown
	// ErrFenceCheckFailed: the server refused a fenced write's check of the
	// hold's own node for a reason other than its absence: nothing was
	// applied, and the hold stands (see Fenced).
	ErrFenceCheckFailed = ihold.ErrFenceCheckFailed
)

// Hold is one acquisition. Its methods are safe for concurrent use, and
// any goroutine may Release it (a recipe's own per-goroutine Release, as
// Curator's, is a separate way to give back the calling goroutine's most
// recent acquisition).
type Hold ihold.Hold

func (h *Hold) in() *ihold.Hold { return (*ihold.Hold)(h) }

// Token is the fencing token: the czxid of the hold's node. It grows
// strictly from each holder to the next, even if the recipe's directory is
// deleted and made again. With several holders at once (semaphore leases,
// read holds), tokens order grants, not exclusive holders.
func (h *Hold) Token() int64 { return h.in().Token() }

// Path is the hold's node (without the client's namespace).
func (h *Hold) Path() string { return h.in().Path() }

// SessionID is the ZooKeeper session that owns the hold's node.
func (h *Hold) SessionID() int64 { return h.in().SessionID() }

// Done is closed when the hold can no longer be trusted, or is released
// (see the package rules).
func (h *Hold) Done() <-chan struct{} { return h.in().Done() }

// Err is nil while the hold is trusted, then says why it is not:
// ErrSuspended, ErrSessionLost, ErrNodeDeleted, ErrLeaseExpired,
// ErrReleased, or ErrClosed (a leader's term when its latch closes).
func (h *Hold) Err() error { return h.in().Err() }

// Context returns a context, derived from parent, that is cancelled when
// the hold ends, with Err as its cause: run the protected work under it.
// Cancel parent to free the context's goroutine early. The cause is Err as
// it was when the hold ended; Err itself may say more later
// (ErrSessionLost once a hold that ended in doubt is known lost). A nil
// parent is bad input: the context is cancelled at once, its cause an
// error matching framework.ErrInvalidArgument.
func (h *Hold) Context(parent context.Context) context.Context { return h.in().Context(parent) }

// Extend moves the end of the hold's lease (a recipe's WithLeaseTime) to d
// from now, if that is later than it is: it never shortens a lease. A
// reentrant hold shares one lease with the other acquisitions of its
// node. Extend fails with ErrNoLeaseTime for a hold without a lease, with
// ErrReleased after Release, and with an error wrapping ErrHoldLost and
// the reason once the hold has ended otherwise (ErrLeaseExpired if its
// lease ran out first): a lease that ended is not brought back.
func (h *Hold) Extend(d time.Duration) error { return h.in().Extend(d) }

// Expiry is when the hold's lease ends, and false for a hold without a
// lease time.
func (h *Hold) Expiry() (time.Time, bool) { return h.in().Expiry() }

// Revoked is closed when another process asks the holder to release, with
// Curator's revocation protocol (the node's data becomes "__REVOKE__"). It
// is only ever closed for a hold of a recipe made revocable; what to do is
// the holder's choice.
func (h *Hold) Revoked() <-chan struct{} { return h.in().Revoked() }

// Release gives back this acquisition (for a leader's term: steps down).
// The last open acquisition of a node deletes it; Release returns once the
// delete is on its way to the server, which applies it before anything
// this client sends afterwards (if the server cannot be reached, the client
// goes on deleting in the background; framework.Client.Drain waits for
// it). A second Release returns ErrReleased and does nothing. If the hold
// was lost before, Release still cleans up and returns an error wrapping
// ErrHoldLost.
func (h *Hold) Release() error { return h.in().Release() }

// Fenced runs ZooKeeper writes that commit only while the hold is held:
// ops (*zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest and
// *zk.CheckVersionRequest, with paths as framework.Client.Multi takes them)
// go to the server as one multi together with a check that the hold's node
// exists. The server applies all of them, atomically, only if the node is
// there at that point of its order of writes, and none of them otherwise.
// A holder that has lost its hold (its session expired, its node deleted)
// can never commit, however late its write arrives: a pause between a
// check of Err and the write, a request queued while the link was down and
// sent on a new session, cannot make it through. It returns the ops'
// results, in order.
//
// What it guarantees: a write that commits committed while the hold's node
// existed, and so, the node being ephemeral and named with a random
// protected prefix, while this hold's session owned it; no other hold of
// an exclusive lock on the same path was granted at that point. What it
// does not: the check is of existence, not of the node's version or owner
// (a revocation request changes the version; a node deleted and re-created
// at the same path by another session would pass, which needs the hold's
// random name; the hold itself ends on that, see Done). It protects state
// in ZooKeeper only; other resources still need Token. With shared holds
// (read holds, semaphore leases) it proves this hold, not exclusivity.
//
// Errors, each wrapped with the hold's path:
//   - before anything is sent: ErrReleased for a released hold; ErrHoldLost
//     and Err's reason for a hold already known lost; an error matching
//     framework.ErrInvalidArgument (a nil ctx, no ops, a nil op, an op of
//     another type, a container or TTL create:
//     framework.ErrUnsupportedInMulti; a multi over the client's size
//     limit, the check included: framework.ErrTooLarge) or
//     framework.ErrInvalidPath for bad input; the context's error;
//   - the node was gone when the multi reached the server: ErrHoldLost
//     with ErrNodeDeleted, or ErrSessionLost if the hold's session is
//     gone. Nothing was applied, and the hold ends (Done closes);
//   - one of ops failed (a version conflict, a node that exists):
//     a *framework.MultiOpError with that op's index among ops, matching
//     the server's error (zk.ErrBadVersion, ...). Nothing was applied;
//     the hold stands;
//   - the server refused the check itself for another reason (no READ
//     permission on the hold's node, say): ErrFenceCheckFailed with the
//     server's error. Nothing was applied; the hold stands;
//   - the reply was lost: ErrOutcomeUnknown.
//
// A Fenced call that races the hold's Release may commit after Release
// returned: Release sends its delete without waiting for it, and a multi
// sent before it is applied before it. The node existed when it committed,
// so no other holder was granted.
//
// Fenced never sends the multi twice. The client's retry policy resends a
// plain Multi after a lost reply, and a multi that committed the first time
// commits again whenever no op conflicts with itself (a sequential create,
// a set of version -1), while the check of the hold still passes. So once
// the multi may have reached the server, a lost reply is ErrOutcomeUnknown
// and not a retry: read the state to learn whether it was applied (it was
// all or none), or make the ops detect their own repetition (a create of a
// fixed name, a set of the version read before) and call Fenced again.
func (h *Hold) Fenced(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	return h.in().Fenced(ctx, ops...)
}
