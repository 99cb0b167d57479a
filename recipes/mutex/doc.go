// Package mutex is a fair, reentrant distributed mutex over ZooKeeper,
// wire-compatible with Apache Curator's InterProcessMutex, so Go and Java
// services can share a lock path.
//
// Curator's classes and theirs here: InterProcessMutex is Mutex,
// InterProcessSemaphoreMutex is SemaphoreMutex, InterProcessMultiLock is
// MultiLock.
//
//	m, err := mutex.New(client, "/locks/billing-run") // Curator's InterProcessMutex layout
//	h, err := m.Acquire(ctx)         // blocks, FIFO; ctx's deadline is the timeout
//	defer h.Release()                // this acquisition, exactly once
//	work := h.Context(ctx)           // cancelled the moment the hold is in doubt
//	err = store.Write(work, data, h.Token()) // the fencing token: the czxid of the lock node
//
// Code that locks per key (an account, an order) takes each key's lock
// once with the package's Acquire, and makes no Mutex per key: the same
// queue, node names, token and loss signal as a Mutex on that path, at
// fewer allocations, and the hold's Release leaves nothing behind (there
// is no Mutex to Close). Such a hold is not reentrant and belongs to no
// goroutine.
//
//	h, err := mutex.Acquire(ctx, client, "/locks/accounts/"+id) // one key, one acquisition
//	defer h.Release()                                           // deletes the node: nothing left
//
// # The hold
//
// Every acquisition returns a *hold.Hold, the handle every recipe of this
// module shares (package hold states its rules): a fencing token (Token:
// the czxid of its lock node, strictly growing from each holder to the
// next, even when the lock directory is deleted and made again), a loss
// signal (Done, Err, Context) that fires as soon as the hold can no longer
// be trusted, and Release, which gives back exactly that acquisition, from
// any goroutine; a second Release of it returns an error wrapping
// zkrecipes.ErrReleased, never a panic, never someone else's release.
//
// Under the client's standard error policy the loss signal fires when the
// link is in doubt: no reply to this client's own requests or pings for
// 2/3 of the session timeout, which is before the server can expire the
// session and grant the lock to anyone else. Watch events do not count as
// a live link (a one-way fault can let them through). It also fires when
// the hold's node is deleted or re-created by someone else
// (zkrecipes.ErrNodeDeleted), and when its lease runs out (WithLeaseTime,
// zkrecipes.ErrLeaseExpired). A hold is followed from the first time its
// holder waits on it (Done, Err, Context): one nobody waits on (a lock per
// key, given back at once) costs no goroutine and no watch while held,
// reads its loss signal when it is looked at or released, and learns of
// its node's deletion only when waited on or entered again. Under framework.SessionOnlyPolicy the link
// alone does not end a hold; Lost does.
//
// A Mutex is reentrant per goroutine, as Curator's per thread: a nested
// Acquire returns a Hold of its own on the same node (same token) without a
// round trip, and Mutex.Release is Curator's per-goroutine release, giving
// back the calling goroutine's most recent acquisition; from another
// goroutine it returns an error wrapping zkrecipes.ErrNotOwner, and one
// too many zkrecipes.ErrNotHeld. A nested Acquire on a lost hold returns
// an error wrapping zkrecipes.ErrHoldLost and the cause, and counts
// nothing; on a hold nobody has waited on, it first reads the node (a
// round trip), so a node someone else deleted is not entered again. Goroutines of one Mutex contend like separate processes.
//
// TryAcquire gives up at once with zkrecipes.ErrWouldBlock when the lock is
// taken, leaving nothing behind. Participants lists the queue, holder
// first, and any client may read it; Revoke asks a holder of a revocable
// lock (WithRevocable) to release, with Curator's revocation protocol
// (Hold.Revoked). A MultiLock takes several locks all or nothing, in the
// order given, and rolls back in reverse.
//
// # Protocol
//
// Contenders queue as path/_c_<uuid>-lock-<seq>, ephemeral-sequential
// nodes whose data is the participant id (Curator's layout: Go and Java
// contenders share one FIFO queue, tested against Curator 5.4). The lowest
// sequence holds; each waiter watches only its predecessor, so one release
// wakes exactly one waiter, and a waiter whose predecessor was the queue's
// head takes the lock without listing the queue again. The create, the
// listing and the fencing token cost one round trip; a release returns
// once its delete is on the wire.
//
// Nothing is left behind: a cancelled or failed acquire deletes its node
// (guaranteed: in the background if the server cannot be reached); a
// waiter whose session expires queues again; Release after a loss returns
// an error wrapping zkrecipes.ErrHoldLost and leaves the Mutex usable.
//
// What it cannot promise: a holder that keeps working after Done has fired,
// or that is paused (GC, SIGSTOP) past the session timeout without noticing,
// can overlap with the next holder. Fencing tokens are the defence: hand the
// token to the protected resource and have it refuse older ones; for state
// kept in ZooKeeper itself, Hold.Fenced writes commit only while the hold
// is held.
//
// # Lease time
//
// WithLeaseTime(d) bounds every hold: a holder that hangs, deadlocks or
// forgets to release would otherwise keep everyone else out for as long
// as its session lives. d after its grant the hold ends by itself, its
// loss signal fires with zkrecipes.ErrLeaseExpired, and then its node is
// deleted, whether or not the holder ever calls Release (Redisson's
// lock(leaseTime), CURATOR-28). Hold.Extend moves the end later. Package
// hold tells the rest.
//
// SemaphoreMutex is the other kind of lock, Curator's
// InterProcessSemaphoreMutex: not reentrant and not tied to a goroutine (take
// it in one, give it back in another through the hold's Release), a
// semaphore of one lease on the engine of package semaphore, and
// wire-compatible with Curator's on the same path. It has no Release of its own: with no
// goroutine to tie a hold to, it could not say which acquisition it meant.
package mutex
