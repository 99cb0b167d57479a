// Package mutex is a fair, reentrant distributed mutex over ZooKeeper,
// wire-compatible with Apache Curator's InterProcessMutex, so Go and Java
// services can share a lock path.
//
// Every Hold carries a fencing token (Token: the czxid of its lock node,
// strictly growing from each holder to the next) and a loss signal (Done,
// Err, Context) that fires as soon as the hold can no longer be trusted:
// under the standard error policy when the client's link drops, which is
// before the server can expire the session and grant the lock to anyone
// else.
//
// # Holds
//
// A Hold is one acquisition, and these rules hold for every recipe of this
// module (mutex holds, read and write holds, semaphore leases):
//
//   - Every successful Acquire or TryAcquire returns a Hold of its own, even
//     a nested (reentrant) one; nested Holds share the node and its token.
//   - Hold.Release gives back exactly that acquisition, from any goroutine.
//     Releasing it again returns ErrReleased and does nothing else: it never
//     panics and never releases another acquisition. The node is deleted
//     when its last acquisition is released. Mutex.Release is Curator's
//     per-goroutine release: it gives back the calling goroutine's most
//     recent acquisition.
//   - Done, Err and Context say when the hold stops being trusted: the link
//     is in doubt (ErrSuspended, standard error policy), the session is
//     gone (ErrSessionLost), the node was deleted or re-created by someone
//     else (ErrNodeDeleted), or the Hold was released (ErrReleased).
//   - No Acquire returns a Hold whose signal has already fired: a nested
//     Acquire on a lost hold returns an error wrapping ErrHoldLost and the
//     cause, and counts nothing; the lost acquisitions still need releasing
//     (which returns ErrHoldLost and cleans up).
//
// What it cannot promise: a holder that keeps working after Done has fired,
// or that is paused (GC, SIGSTOP) past the session timeout without noticing,
// can overlap with the next holder. Fencing tokens are the defence: hand the
// token to the protected resource and have it refuse older ones.
//
// Waiting is cheap: each waiter watches only its predecessor, one release
// wakes exactly one waiter, and a waiter whose predecessor was the queue's
// head takes the lock without listing the queue again.
//
// SemaphoreMutex is the other kind of lock, Curator's
// InterProcessSemaphoreMutex: not reentrant and not tied to a goroutine (take
// it in one, give it back in another through the lease's Release), built on
// package semaphore as a semaphore of one lease, and wire-compatible with
// Curator's on the same path.
package mutex
