// Package counter holds distributed counters kept in one ZooKeeper node,
// wire-compatible with Curator 5.4's DistributedAtomicLong (Long),
// DistributedAtomicInteger (Integer) and DistributedAtomicValue (Bytes) on
// the same path, and close to Redisson's RAtomicLong: a Long is 8 bytes
// big-endian, an Integer 4 bytes big-endian, a Bytes the node's raw bytes,
// and a missing or empty node reads as zero (nil).
//
//	hits, err := counter.NewLong(client, "/counters/hits", // Curator's DistributedAtomicLong: 8 bytes big-endian
//		counter.WithOptimisticRetry(retry.NTimes(10, 10*time.Millisecond)),
//		counter.WithPromotedToLock("/counters/hits-lock", 5*time.Second, retry.NTimes(10, 10*time.Millisecond)))
//	r, err := hits.Increment(ctx) // also Add, Subtract, Decrement, CompareAndSet, Swap, Set, Initialize, Get
//	switch {
//	case errors.Is(err, zkrecipes.ErrOutcomeUnknown): // the reply was lost: added once, or not at all
//	case err == nil && r.Succeeded: // r.PreValue -> r.PostValue; r.Stats counts the tries
//	case err == nil: // lost to other writers on every try, the lock's included
//	}
//
// Every change is a compare-and-set: read the node and its version, write
// the new value with that version. Add (Increment, Decrement, Subtract)
// and Swap try again after a conflict (someone else wrote first) under the
// optimistic retry policy (WithOptimisticRetry); if that runs out and
// WithPromotedToLock is given, the counter takes a mutex (recipes/mutex,
// Curator's InterProcessMutex, so Java clients promoted to the same lock
// path queue with it) and tries again under it, each write fenced by the
// hold (it commits only while the mutex is held). CompareAndSet is one
// try. Set writes whatever the node holds; Initialize creates the node
// only if it is missing.
//
// Where it differs from Curator: a write is sent at most once. Curator
// (and a plain framework write) resends a write whose reply was lost, and
// then re-reads and tries again; if the lost write had been applied, the
// increment is applied twice. Here a write whose reply was lost returns an
// error matching zkrecipes.ErrOutcomeUnknown, with the value read and the
// value written in the Result: the node holds one or the other's
// successors, and only the caller can decide whether to try again. A write
// is sent again only when it certainly never reached the server.
//
// A missing or empty node holds 0 (a Bytes: nothing) for writes as for
// Get: CompareAndSet(0, n) on it succeeds (a missing node is created), so
// a loop of Get then CompareAndSet makes progress from a fresh path.
// Curator's compareAndSet never succeeds there. A compare-and-set that
// lands on a node deleted and made again since it was read (ZooKeeper
// compares versions only) is zkrecipes.ErrRecreated, not a success.
//
// Every operation returns a Result: whether it succeeded, the value before
// and after, and the counts of Curator's AtomicStats. A compare-and-set
// that loses to other writers after all its tries is not an error:
// Succeeded is false. Every error names the counter and its path ("long
// counter /counters/hits: ...") and wraps the module's sentinels
// (zkrecipes.ErrBadData for a node that does not hold a number of the
// counter's size, zkrecipes.ErrClosed, ...).
//
// The chaos suite checks a counter's history with porcupine (linearizable
// against a counter model) under every fault it injects.
package counter
