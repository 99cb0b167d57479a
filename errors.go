package zkrecipes

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// The errors of this module, each declared once, here. Every package of the
// module returns them wrapped: a recipe's call in a *framework.RecipeError
// that names the recipe and its path ("mutex /locks/billing: would
// block"), a request in a *framework.OpError that names the operation and
// the path; errors.Is finds them. A recipe's few errors of its own are in
// its package (barrier.ErrNotEntered, leader.ErrPanic, rwlock.ErrUpgrade,
// shared.ErrUnversioned, ...).
//
// The client and its requests.
var (
	// ErrClosed: the client, or the recipe, was closed.
	ErrClosed = errors.New("closed")
	// ErrInvalidArgument is wrapped by errors about bad input (a nil
	// context or client, a count or an option out of its range, a zero or
	// nil recipe), reported before anything is sent.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNilContext is wrapped by the error of a call given a nil context,
	// before anything is sent. It also matches ErrInvalidArgument.
	ErrNilContext = fmt.Errorf("%w: nil context", ErrInvalidArgument)
	// ErrInvalidPath is wrapped by errors about a malformed path (or the
	// root, as a recipe's path), reported before anything is sent. It also
	// matches zk.ErrInvalidPath.
	ErrInvalidPath error = &matchingError{msg: "invalid path", also: zk.ErrInvalidPath}
	// ErrTooLarge is wrapped by the error of a write whose request is over
	// the client's size limit (framework.WithMaxRequestSize; by default
	// ZooKeeper's jute.maxbuffer): the server would close the connection on
	// reading its length. Nothing is sent. It also matches
	// ErrInvalidArgument; the message gives the sizes.
	ErrTooLarge error = &matchingError{msg: "request over the server's size limit", also: ErrInvalidArgument}
	// ErrUnsupportedInMulti is wrapped by the error of a multi given an op
	// that ZooKeeper would silently change or refuse inside a multi: a
	// create with the container flag (the server makes a plain persistent
	// node, never reaped) or with a TTL flag (the server fails it). Nothing
	// is sent. It also matches ErrInvalidArgument.
	ErrUnsupportedInMulti error = &matchingError{msg: "op not supported inside a multi", also: ErrInvalidArgument}
	// ErrUnsupported is wrapped by the error of a request the servers
	// refuse for lack of a feature they were not started with (a TTL node
	// without zookeeper.extendedTypesEnabled=true): no retry makes it, so
	// it is said at once; the message names the setting. It also matches
	// the standard library's errors.ErrUnsupported.
	ErrUnsupported error = &matchingError{msg: "not supported by the servers", also: errors.ErrUnsupported}
	// ErrOutcomeUnknown is wrapped by the error of a write sent at most
	// once (framework.Client.MultiOnce, hold.Hold.Fenced, the counters',
	// the barrier's, any write over framework.DefaultMaxRequestSize) whose
	// reply was lost: the connection dropped, the client closed or the
	// caller's context ended while it was on its way. The write may or may
	// not have been applied (a multi: all of it or none); read the state to
	// find out before writing again.
	ErrOutcomeUnknown = errors.New("outcome unknown: the write may or may not have been applied")
	// ErrDeferred is joined to the error of a guaranteed delete that could
	// not finish now: the client goes on with it in the background.
	ErrDeferred = errors.New("delete continues in the background")
)

// The session and the nodes a recipe follows.
var (
	// ErrSuspended: the link to ZooKeeper dropped while something built on
	// the session was trusted (under framework.StandardPolicy). The session
	// may still be alive, but nothing proves what it owns any more.
	ErrSuspended = errors.New("connection suspended")
	// ErrSessionLost: the session that owned something (a hold's node, a
	// barrier member's) is gone, and its ephemeral nodes with it.
	ErrSessionLost = errors.New("session lost")
	// ErrNodeDeleted: a node a recipe follows (a hold's, a member's, a
	// shared value's) was deleted, or replaced by a node of another session,
	// by someone other than the recipe.
	ErrNodeDeleted = errors.New("node deleted by someone else")
	// ErrRecreated: a compare-and-set landed on a node deleted and made
	// again since the value it compared with was read (ZooKeeper compares
	// versions only, and the new node was back at the version read): the
	// write was applied, over a value the caller never read. Not a success,
	// and not a refusal to try again.
	ErrRecreated = errors.New("node deleted and made again since it was read")
	// ErrBadData: the node at a recipe's path does not hold what the recipe
	// stores there (another recipe's node, or corrupt data).
	ErrBadData = errors.New("node data not in the recipe's format")
	// ErrStale: what a recipe shows from memory (a shared value, a cache's
	// view, a group's members, a service's instances) may not be the
	// server's latest. The error that wraps it also matches the reason:
	// ErrSuspended, ErrSessionLost, ErrNodeDeleted, or the read that failed;
	// a view being read again after a gap has no reason of its own.
	ErrStale = errors.New("may be stale")
	// ErrFellBehind: a subscription (framework.Subscription) ended because
	// its reader let more values pile up than its bound holds; what piled
	// up was dropped, and nothing more comes. Subscribe again: the state as
	// it stands comes first, then every change (docs/vocabulary.md).
	ErrFellBehind = errors.New("subscriber fell behind")
)

// A recipe's lifecycle.
var (
	// ErrStarted: Start of a recipe that has started already.
	ErrStarted = errors.New("already started")
	// ErrNotStarted: a call that needs Start first.
	ErrNotStarted = errors.New("not started")
)

// Acquiring, holding and releasing (package hold).
var (
	// ErrWouldBlock: a TryAcquire found the lock held (or the leases
	// taken).
	ErrWouldBlock = errors.New("would block")
	// ErrReleased: the hold was released; a second Release returns it.
	ErrReleased = errors.New("released")
	// ErrHoldLost: the hold stopped being trusted before Release; the error
	// says why too. Anything done after that moment was unprotected.
	ErrHoldLost = errors.New("hold lost before release")
	// ErrLeaseExpired: the hold's lease time (a recipe's WithLeaseTime) ran
	// out before Release: its node is being deleted (at once, or once the
	// link is back if it is down), and others may hold the lock already.
	ErrLeaseExpired = errors.New("lease time ran out")
	// ErrNoLeaseTime: Extend of a hold acquired without a lease time.
	ErrNoLeaseTime = errors.New("hold has no lease time")
	// ErrNotOwner: a goroutine released a reentrant lock that another
	// goroutine holds.
	ErrNotOwner = errors.New("held by another goroutine")
	// ErrNotHeld: a reentrant lock was released more times than acquired.
	ErrNotHeld = errors.New("not held")
	// ErrFenceCheckFailed: the server refused a fenced write's check of the
	// hold's own node for a reason other than its absence (no READ
	// permission on it, say): nothing was applied, and the hold stands.
	ErrFenceCheckFailed = errors.New("fenced write: the check of the hold's node failed")
)

// matchingError is a sentinel that also matches another one.
type matchingError struct {
	msg  string
	also error
}

func (e *matchingError) Error() string { return e.msg }
func (e *matchingError) Unwrap() error { return e.also }
