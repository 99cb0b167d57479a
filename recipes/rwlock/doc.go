// Package rwlock is a fair distributed read-write lock over ZooKeeper,
// wire-compatible with Apache Curator's InterProcessReadWriteLock: readers
// and writers queue in one directory as path/_c_<uuid>-__READ__<seq> and
// path/_c_<uuid>-__WRIT__<seq>, in one global order, so Go and Java
// processes share one lock.
//
//	l, err := rwlock.New(client, "/locks/catalog")
//	h, err := l.ReadLock().Acquire(ctx)  // readers share
//	defer l.ReadLock().Release()          // the calling goroutine's most recent read hold
//
//	w, err := l.WriteLock().Acquire(ctx) // a writer waits for everyone before it
//	r, err := l.ReadLock().Acquire(ctx)  // downgrade: at once, in the writer's place
//	_ = l.WriteLock().Release()          // no queued writer slips in
//	_, err = l.WriteLock().Acquire(ctx)  // upgrade from a read hold: ErrUpgrade, at once
//
// Readers share; a writer holds only when it is first of all. A reader waits
// only on writers queued before it (never on one that came after it), and
// watches the nearest of them. Both sides are reentrant per goroutine and
// hand out the same *hold.Hold as the mutex (package hold): fencing token,
// loss signal, no orphans, Fenced writes, a lease time with WithLeaseTime.
// Both sides satisfy mutex.Lock, so they compose in a mutex.MultiLock.
//
// Downgrade: a goroutine holding the write lock may take the read lock at
// once, then release the write lock; the read node takes the write node's
// place in the queue (Curator >= 5.5's protocol), so no queued writer slips
// in between. Upgrade (read to write) is refused with ErrUpgrade rather than
// deadlocking.
package rwlock
