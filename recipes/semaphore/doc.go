// Package semaphore is a distributed counting semaphore over ZooKeeper,
// wire-compatible with Apache Curator's InterProcessSemaphoreV2: Go and Java
// processes can share one semaphore path, and together never hold more
// leases than its maximum.
//
//	s, err := semaphore.New(client, "/pools/db", 3) // Curator's InterProcessSemaphoreV2 layout
//	leases, err := s.Acquire(ctx, 2)                // two leases or none
//	defer hold.ReleaseAll(leases...)                // any goroutine may release a lease
//	token := leases[0].Token()                      // a lease is a *hold.Hold: Done, Err as every hold
//	// or follow a Curator SharedCount: semaphore.NewShared(client, "/pools/db", "/pools/db-max")
//
// A Semaphore hands out leases, each a *hold.Hold, the handle every recipe
// of this module shares (package hold states its rules): a fencing token
// (Token: the czxid of its node, growing from each lease to the next), a
// loss signal (Done, Err, Context) that fires as soon as the lease can no
// longer be trusted, under the client's standard error policy when its
// link drops, which is before the server can expire the session and let
// anyone else take the lease, and Release. Leases are not owned by a
// goroutine: any goroutine may Release one.
//
// The maximum is fixed (New) or read from a Curator SharedCount node
// (NewShared) and followed when it changes: raising it lets waiting acquirers
// in, lowering it makes new acquirers wait until enough leases are returned
// (leases already held are never taken back).
//
// # Protocol
//
// The layout and algorithm are Curator's, so that both see and respect each
// other's leases:
//
//	path/locks/_c_<uuid>-lock-<seq>    an internal mutex (InterProcessMutex)
//	path/leases/_c_<uuid>-lease-<seq>  one ephemeral-sequential node per lease,
//	                                   data = participant id
//
// An acquirer takes the internal mutex, creates its lease node, and lists
// path/leases with a watch until the number of children is at most the
// maximum; then it releases the internal mutex. Only the holder of the
// internal mutex waits on the leases directory, so one returned lease wakes
// one process. A lease is returned by deleting its node.
//
// Beyond Curator:
//   - No lease node is ever left behind: a cancelled, timed-out or failed
//     acquire deletes every node it made (guaranteed, in the background if the
//     server cannot be reached), and always releases the internal mutex
//     (Curator's CURATOR-315, -335, -462 were all orphans of this kind).
//   - A session lost while waiting starts the acquire over under the new
//     session; a lease lost while held is reported on its Done channel, and
//     Close still deletes its node if the session the server kept it for is
//     alive (CURATOR-595).
//   - Acquire of several leases holds the internal mutex until it has them
//     all, so two Go processes acquiring several leases each cannot deadlock
//     each other holding part of what they need. (Curator takes the mutex once
//     per lease; Curator processes acquiring several leases can still
//     deadlock among themselves.)
//   - TryAcquire does not take the internal mutex: it creates its lease node,
//     lists once, and keeps the node only if it fits. It never waits, and it
//     cannot take a lease the current waiter is entitled to, since the
//     waiter's own node is already counted.
package semaphore
