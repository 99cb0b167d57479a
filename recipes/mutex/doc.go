// Package mutex is a fair, reentrant distributed mutex over ZooKeeper,
// wire-compatible with Apache Curator's InterProcessMutex, so Go and Java
// services can share a lock path.
//
// Curator's classes and theirs here: InterProcessMutex is Mutex,
// InterProcessSemaphoreMutex is SemaphoreMutex, InterProcessMultiLock is
// MultiLock.
//
// Every acquisition returns a *hold.Hold, the handle every recipe of this
// module shares (package hold states its rules): a fencing token (Token:
// the czxid of its lock node, strictly growing from each holder to the
// next), a loss signal (Done, Err, Context) that fires as soon as the hold
// can no longer be trusted, under the standard error policy when the
// client's link drops, which is before the server can expire the session
// and grant the lock to anyone else, and Release, which gives back exactly
// that acquisition, from any goroutine.
//
// A Mutex is reentrant per goroutine, as Curator's per thread: a nested
// Acquire returns a Hold of its own on the same node (same token), and
// Mutex.Release is Curator's per-goroutine release, giving back the calling
// goroutine's most recent acquisition. A nested Acquire on a lost hold
// returns an error wrapping zkrecipes.ErrHoldLost and the cause, and counts nothing.
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
// it in one, give it back in another through the hold's Release), built on
// package semaphore as a semaphore of one lease, and wire-compatible with
// Curator's on the same path.
package mutex
