// Package hold is the one handle every recipe of this module hands out for
// one acquisition, and the errors they share: a mutex hold
// (recipes/mutex), a read or write hold (recipes/rwlock), a semaphore lease
// (recipes/semaphore) and a term of leadership (recipes/leader) are all a
// *Hold, with the same methods meaning the same thing.
//
// The rules every recipe keeps:
//   - every successful Acquire or TryAcquire returns a Hold of its own;
//   - Release gives back exactly that acquisition, once: a second Release
//     returns zkrecipes.ErrReleased, never panics and never releases another
//     acquisition; after the recipe's Close gave the hold back, Release
//     returns an error matching both zkrecipes.ErrReleased and zkrecipes.ErrClosed;
//   - Done closes, and Err says why, the moment the hold can no longer be
//     trusted: the link is in doubt (zkrecipes.ErrSuspended, under the client's
//     standard error policy), the session is gone (zkrecipes.ErrSessionLost), or its
//     node was deleted or re-created by someone else (zkrecipes.ErrNodeDeleted), or
//     its lease time ran out (zkrecipes.ErrLeaseExpired, with WithLeaseTime); under
//     the standard policy this happens before the server can expire the
//     session, and so before anyone else can be granted the lock; Release
//     ends it too (zkrecipes.ErrReleased); a hold that ended in doubt says
//     zkrecipes.ErrSessionLost as well once its session is known lost;
//   - no acquire ever returns a Hold whose signal has already fired: a
//     reentrant acquire of a lost hold returns an error wrapping
//     zkrecipes.ErrHoldLost instead;
//   - Release of a hold that was lost still cleans up (the node is deleted
//     while its session lives) and returns an error wrapping zkrecipes.ErrHoldLost:
//     whatever the holder did after Done fired was unprotected;
//   - a hold is followed from the first time its holder waits on its end
//     (Done, Err, Context): one nobody waits on (a lock per key, given
//     back at once) costs no goroutine and no watch while held. Its loss
//     signal is read when it is looked at or released, so Release still
//     says a session lost or in doubt; a node deleted by someone else is
//     learned only by a hold that was waited on.
//
// Hand Token, the fencing token, to every resource the hold protects, and
// have it refuse tokens lower than the highest it has seen.
//
// # Fenced writes
//
// A fencing token protects a resource only if the resource checks it.
// State kept in ZooKeeper itself can be protected exactly, with no
// cooperation from anyone: Fenced sends ZooKeeper writes as one multi
// together with a check that the hold's own node still exists, so the
// server applies them only while the hold is held, in its own order of
// writes, and none of them otherwise. A holder that lost its lock can
// never commit: not after a GC pause, not with a request queued during a
// cut and sent on a new session, not in the moment before its own watch
// has told it its node is gone. Curator leaves this to the user
// (CURATOR-542). The multi is sent at most once (a lost reply is
// zkrecipes.ErrOutcomeUnknown), and with shared holds (read holds,
// semaphore leases) it proves this hold, not exclusivity. The chaos suite
// writes a register in ZooKeeper through Fenced only and checks, in zxid
// order, that no write came from a hold that was not held.
//
//	h, err := m.Acquire(ctx) // any recipe's hold: mutex, read/write, lease, term
//	res, err := h.Fenced(ctx,
//		&zk.SetDataRequest{Path: "/config/primary", Data: []byte("db-7"), Version: -1},
//		&zk.CreateRequest{Path: "/config/log/e-", Data: []byte("db-7"), Flags: zk.FlagSequence},
//	)
//	switch {
//	case errors.Is(err, zkrecipes.ErrHoldLost):       // the node was gone: nothing applied, the hold ends
//	case errors.Is(err, zkrecipes.ErrOutcomeUnknown): // reply lost: all or nothing applied; read to know
//	case errors.As(err, &opErr):                      // *framework.MultiOpError: op i failed, nothing applied
//	}
//
// # Lease time
//
// A holder that hangs, deadlocks or forgets to release keeps everyone else
// out for as long as its session lives, which for a healthy process is
// forever. A recipe's WithLeaseTime(d) (mutex, semaphore mutex, read-write
// lock, semaphore; Redisson's lock(leaseTime), CURATOR-28) bounds every
// hold: d after its grant it ends by itself, its loss signal fires with
// zkrecipes.ErrLeaseExpired, and then its node is deleted, whether or not
// the holder ever calls Release.
//
//	m, _ := mutex.New(client, "/locks/job-42", mutex.WithLeaseTime(30*time.Second))
//	h, err := m.Acquire(ctx)
//	if err != nil {
//		return err
//	}
//	defer h.Release() // still needed: it says the lease ran out, if it did
//	work := h.Context(ctx) // cancelled at the lease's end, as at any loss
//	for _, step := range steps {
//		if err := h.Extend(30 * time.Second); err != nil {
//			return err // ended: zkrecipes.ErrHoldLost and why (zkrecipes.ErrLeaseExpired, ...)
//		}
//		run(work, step)
//	}
//
// What a lease promises, and what it does not:
//   - Extend(d) moves the end to d from now, never earlier; Expiry says
//     when. A reentrant acquire renews the lease of the node it shares.
//   - The holder is told before the node is deleted, so before anyone else
//     can be granted; like any loss, work that goes on after it is
//     unprotected (fencing and Fenced still refuse it).
//   - The end is measured on the holder's clock, and the delete is sent
//     from the holder's process: if that process is frozen or dead, the
//     session's timeout ends the hold, as without a lease. A lease that
//     ends while the link is down deletes the node once the link is back
//     under the same session.
//   - A hold lost first (cut, expiry, node deleted) keeps its first reason
//     (its signal fired then); its node is still deleted at the lease's end
//     if its session lives.
//   - A Release that reaches the node before its lease's end is a plain
//     release.
//   - A goroutine that forgot a reentrant mutex or read-write hold can take
//     the lock again once the lease has run out, as with Redisson; nothing
//     of a forgotten hold stays in the process after its lease's end.
//
// # For a recipe of your own
//
// A recipe of yours hands out the same Hold: package engine follows a
// granted node (engine.Follow) as an engine.Node, and each acquisition of
// it is a Hold made with New, whose release callback is the recipe's
// bookkeeping. Holders never need New, Source or anything of the engine.
package hold

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Hold is one acquisition: its fencing token (Token), the signal that it
// can no longer be trusted (Done, Err, Context) and revocation requests
// (Revoked). Release gives back exactly this acquisition, once, from any
// goroutine (a reentrant recipe's own per-goroutine Release is another way
// to give back the calling goroutine's most recent one). Its methods are
// safe for concurrent use; a nil *Hold's say it is not held.
type Hold struct {
	src      Source
	release  func(*Hold) error
	released atomic.Bool
	granted  time.Time             // taken just before its last check of the link
	closeErr atomic.Pointer[error] // set when its recipe's Close released it: what Release says then

	// mu guards done and err. It is taken under the source's lock (the
	// source ends its holds while it holds its own), never the other way.
	mu   sync.Mutex
	done chan struct{}
	err  error // the first reason: the source's (raw) or zkrecipes.ErrReleased
	// ended is done as a context, made by the first Context and cancelled
	// with done: what Context's contexts follow without a goroutine. A
	// pointer: a hold that never makes one pays a word for it.
	ended *endedContext
}

// endedContext is a Hold's done as a context.
type endedContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Source is what a Hold is an acquisition of, for the author of a recipe:
// a granted node, followed. engine.Node is the Source of every recipe of
// this module, and the one to use for a recipe of your own (engine.Follow,
// engine.Node.NewHold); the methods below are the contract between a Hold
// and its Source, which holders never see. Its methods must be safe for
// concurrent use.
type Source interface {
	// Path is the node (without the client's namespace).
	Path() string
	// Token is the fencing token: the node's czxid.
	Token() int64
	// Session is the session that owns the node.
	Session() conn.Session
	// Client is the client the node was granted through: Fenced writes
	// through it.
	Client() *framework.Client
	// Revoked is closed when another process asks the holder to release.
	Revoked() <-chan struct{}
	// Watch says a holder waits on the end of a Hold of the source (its
	// Done, Err or Context): a source may put off following its node
	// until the first call, so that a hold nobody waits on costs nothing
	// while held (engine.Node does). Called on every such look, it must
	// be cheap after the first.
	Watch()
	// Recipe is the recipe, and its path, that the Hold's errors name
	// (framework.RecipeErr); "" names none.
	Recipe() (name, path string)
	// Check checks that the link still has proof of life
	// (framework.Client.CheckTrust), ending the source if not, and then
	// says what Loss says.
	Check() error
	// Loss is nil while the source is trusted, then why not, as it should
	// be told now (a source that ended in doubt says
	// zkrecipes.ErrSessionLost too once its session is known lost).
	Loss() error
	// Attach checks as Check does and then, in one step under the
	// source's lock, returns Loss if the source has ended, or else
	// remembers h: when the source ends with err, it calls end(h, err)
	// while it holds its lock, until Detach(h). New calls it.
	Attach(h *Hold, end func(h *Hold, err error)) error
	// Detach forgets h: its Release has begun.
	Detach(h *Hold)
	// End ends the source with err (the first reason stands): Fenced
	// found the node gone.
	End(err error)
	// Extend moves the end of the source's lease to d from now if that
	// is later (d is positive): an error matching zkrecipes.ErrReleased,
	// zkrecipes.ErrHoldLost (and why) or zkrecipes.ErrNoLeaseTime if it
	// cannot.
	Extend(d time.Duration) error
	// Expiry is when the source's lease ends, false without a lease.
	Expiry() (time.Time, bool)
}

// New is, for the author of a recipe, one acquisition of src, handed to
// the holder: release is the recipe's bookkeeping for it, run at most
// once, from Hold.Release (the recipe decides there whether src's last
// acquisition is given back, and then releases src). If src has lost
// trust already, New returns nil and an error wrapping
// zkrecipes.ErrHoldLost and why: no Hold is handed out under a signal that
// has fired. A release that returns ErrReleasedByClose (alone or joined
// with other errors) says the recipe's Close gave the hold back: the
// holder's Release then says so. A nil src or release is bad input
// (zkrecipes.ErrInvalidArgument).
//
// New is the last moment before a hold reaches user code: src checks that
// the link still has proof of life (Source.Attach), and a source whose
// link has gone without it past the loss signal's bound (a process thawed
// after a long freeze) ends there, with zkrecipes.ErrSuspended, instead of
// being handed out.
func New(src Source, release func(*Hold) error) (*Hold, error) {
	if src == nil || release == nil {
		return nil, fmt.Errorf("%w: hold.New needs a source and a release", zkrecipes.ErrInvalidArgument)
	}
	h := &Hold{src: src, release: release, done: make(chan struct{}), granted: time.Now()}
	if err := src.Attach(h, end); err != nil {
		return nil, fmt.Errorf("%w: %w", zkrecipes.ErrHoldLost, err)
	}
	return h, nil
}

// end is what a Source calls, under its lock, when it ends with err: the
// first reason stands.
func end(h *Hold, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
		close(h.done)
		if h.ended != nil {
			h.ended.cancel()
		}
	}
}

// named names the Source's recipe in err.
func (h *Hold) named(err error) error {
	if err == nil {
		return nil
	}
	if recipe, path := h.src.Recipe(); recipe != "" {
		return framework.RecipeErr(recipe, path, err)
	}
	return err
}

// state is the hold's first reason (nil while it is open).
func (h *Hold) state() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// told is e, the hold's first reason, as it should be told now: its own
// release as it is, the source's as the source tells it.
func (h *Hold) told(e error) error {
	if e == nil || e == zkrecipes.ErrReleased {
		return e
	}
	return h.src.Loss() // the source's first reason: it never changes
}

// Token is the fencing token: the czxid of the hold's node. It grows
// strictly from each holder to the next, even if the recipe's directory is
// deleted and made again. With several holders at once (semaphore leases,
// read holds), tokens order grants, not exclusive holders. A nil Hold's is
// 0.
func (h *Hold) Token() int64 {
	if h == nil {
		return 0
	}
	return h.src.Token()
}

// Granted is when the hold was first handed out: the time taken just
// before the check, at its grant, that its link had proof of life
// (framework.Client.CheckTrust). The hold is trusted from then until it
// ends. A process frozen after Granted (a GC pause, SIGSTOP) holds it as
// a zombie until it finds out, as any holder may, which is what the
// fencing token is for; Err finds out at once on thaw (it checks the link
// again), Done and Context once the client has noticed the dead link, a
// moment later. The zero time for a nil Hold.
func (h *Hold) Granted() time.Time {
	if h == nil {
		return time.Time{}
	}
	return h.granted
}

// Path is the hold's node (without the client's namespace).
func (h *Hold) Path() string {
	if h == nil {
		return ""
	}
	return h.src.Path()
}

// SessionID is the ZooKeeper session that owns the hold's node.
func (h *Hold) SessionID() int64 {
	if h == nil {
		return 0
	}
	return h.src.Session().ID
}

// Done is closed when the hold can no longer be trusted: on Suspended
// under the client's standard error policy, on Lost under the session-only
// policy, when its node is deleted or re-created by someone else, when its
// lease runs out, and when this hold is released. Under the standard
// policy it closes before the server can expire the session, and so before
// anyone else can be granted the lock. The first call has the hold
// followed from then on (see the package doc). A nil Hold's is closed.
func (h *Hold) Done() <-chan struct{} {
	if h == nil {
		return closedChan
	}
	h.src.Watch()
	return h.done
}

// closedChan is the Done of a nil Hold.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// errNilHold is what a nil Hold says.
var errNilHold = fmt.Errorf("%w: nil hold", zkrecipes.ErrInvalidArgument)

// Err is nil while the hold is trusted, then says why it is not:
// zkrecipes.ErrSuspended, zkrecipes.ErrSessionLost (also once a hold that
// ended in doubt is known lost), zkrecipes.ErrNodeDeleted, zkrecipes.ErrLeaseExpired,
// zkrecipes.ErrReleased, or zkrecipes.ErrClosed (a leader's term when its latch
// closes; the client's Close says zkrecipes.ErrSessionLost). A nil Hold's
// wraps zkrecipes.ErrInvalidArgument.
func (h *Hold) Err() error {
	if h == nil {
		return errNilHold
	}
	return h.named(h.errNow())
}

// errNow checks the link first (Source.Check): a hold is not trusted on a
// link past its bound.
func (h *Hold) errNow() error {
	loss := h.src.Check()
	e := h.state()
	if e == nil && h.released.Load() {
		// Release has begun: detached from the source, so a loss now
		// would not end the hold; it is released, as end is about to say.
		e = zkrecipes.ErrReleased
	}
	if e != nil && e != zkrecipes.ErrReleased && loss != nil {
		return loss // the source's reason, told as of the check
	}
	return h.told(e)
}

// Context returns a context, derived from parent, that is cancelled when
// the hold ends, with Err as its cause: run the protected work under it.
// It costs no goroutine while it waits (context.AfterFunc on it does not
// either), so a process may keep one per hold of a thousand. The cause is
// Err as it was when the hold ended; Err itself may say more later
// (zkrecipes.ErrSessionLost once a hold that ended in doubt is known
// lost). A nil parent is bad input: the context is cancelled at once, its
// cause an error matching zkrecipes.ErrInvalidArgument.
func (h *Hold) Context(parent context.Context) context.Context {
	if parent == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(fmt.Errorf("hold context: %w", zkrecipes.ErrNilContext))
		return ctx
	}
	ctx, cancel := context.WithCancelCause(parent)
	if h == nil {
		cancel(h.Err())
		return ctx
	}
	ended := h.endedCtx()
	if ended.Err() != nil {
		// Ended already: done when Context returns, not a moment later
		// (AfterFunc's goroutine), so no work starts under it as if held.
		cancel(h.Err())
		return ctx
	}
	// Each side stops the other: the hold's end cancels ctx with its
	// cause, and ctx's end (parent's) unhooks it from the hold.
	unhook := context.AfterFunc(ended, func() { cancel(h.Err()) })
	context.AfterFunc(ctx, func() { unhook() })
	return ctx
}

// endedCtx is done as a context (h.ended), made at its first use.
func (h *Hold) endedCtx() context.Context {
	h.src.Watch()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.ended = &endedContext{ctx, cancel}
		if h.err != nil {
			cancel()
		}
	}
	return h.ended.ctx
}

// Revoked is closed when another process asks the holder to release, with
// Curator's revocation protocol (the node's data becomes "__REVOKE__"). It
// is only ever closed for a hold of a recipe made revocable; what to do is
// the holder's choice. A nil Hold's never closes.
func (h *Hold) Revoked() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.src.Revoked()
}

// Release gives back this acquisition (for a leader's term: steps down).
// The last open acquisition of a node deletes it; Release returns once the
// delete is on its way to the server, which applies it before anything
// this client sends afterwards (if the server cannot be reached, the
// client goes on deleting in the background; framework.Client.Drain waits
// for it; the wait is bounded by framework.WithReleaseTimeout). A second
// Release returns zkrecipes.ErrReleased and does nothing. If the hold was lost
// before, Release still cleans up and returns an error wrapping
// zkrecipes.ErrHoldLost. A nil Hold's wraps zkrecipes.ErrInvalidArgument.
func (h *Hold) Release() error {
	if h == nil {
		return errNilHold
	}
	return h.named(h.releaseOnce())
}

func (h *Hold) releaseOnce() error {
	if h.released.Swap(true) {
		if p := h.closeErr.Load(); p != nil {
			return *p
		}
		return zkrecipes.ErrReleased
	}
	// Detached first: from then on the source's end leaves it alone, and
	// its first reason is what it was at that moment.
	h.src.Detach(h)
	end(h, zkrecipes.ErrReleased)
	lost := h.told(h.state())
	err := h.release(h)
	var loss error
	if lost != nil && !errors.Is(lost, zkrecipes.ErrReleased) && lost != zkrecipes.ErrClosed {
		loss = fmt.Errorf("%w: %w", zkrecipes.ErrHoldLost, lost)
	}
	if errors.Is(err, ErrReleasedByClose) || lost == zkrecipes.ErrClosed {
		// Its recipe's Close gave it back (a latch's term ends with
		// zkrecipes.ErrClosed): the user's own doing. A loss before it is still
		// said: whatever the holder did after it was unprotected.
		err = withoutByClose(err)
		e := ErrReleasedByClose
		if loss != nil || err != nil {
			e = errors.Join(ErrReleasedByClose, loss, err)
		}
		h.closeErr.Store(&e)
		return e
	}
	if err == nil && loss != nil {
		err = loss
	}
	return err
}

// withoutByClose is err without ErrReleasedByClose, the release callback's
// word that its recipe's Close gave the hold back: nil if that is all it
// says.
func withoutByClose(err error) error {
	if !errors.Is(err, ErrReleasedByClose) {
		return err
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil
	}
	var rest []error
	for _, e := range joined.Unwrap() {
		if !errors.Is(e, ErrReleasedByClose) {
			rest = append(rest, e)
		}
	}
	return errors.Join(rest...)
}

// ReleaseAll releases holds in reverse order (the order in which nested
// locks are given back) and reports every failure, each naming its hold.
// Nil holds are skipped.
func ReleaseAll(holds ...*Hold) error {
	var errs []error
	for i := len(holds) - 1; i >= 0; i-- {
		if holds[i] == nil {
			continue
		}
		if err := holds[i].Release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
