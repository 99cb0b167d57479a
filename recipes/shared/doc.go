// Package shared is a value every process sees and may change, kept in one
// ZooKeeper node, wire-compatible with Apache Curator's SharedValue
// (Value) and SharedCount (Count): Go and Java processes can share one path.
// Redisson's nearest is RBucket with compareAndSet and listeners.
//
//	count, err := shared.NewCount(client, "/config/replicas", 3) // Curator's SharedCount: 4-byte big-endian int
//	err = count.Start(ctx)           // makes the node with the seed if missing, then follows it
//	cur, err := count.Get()          // Versioned[int32]: Value, Version, Zxid
//	cur, ok, err := count.TrySet(ctx, cur, cur.Value+1) // compare-and-set by version; !ok: cur is the fresh value
//	sub := count.Subscribe()         // every value read, in order, never an older after a newer
//	if err := count.Err(); err != nil { ... } // zkrecipes.ErrStale (with zkrecipes.ErrSuspended, ErrSessionLost, ErrNodeDeleted)
//
// A Value follows its node from Start to Close: Get returns the last value
// read, with the node's version and modification zxid (Versioned), and
// Subscribe delivers each value read, in order (a
// *framework.Subscription, as every stream of the module). TrySet is a
// compare-and-set on the node's version: it writes only if nobody changed
// the node since the value it is given was read, so that read-modify-write
// loops never lose an update. Set writes unconditionally.
//
// # Protocol
//
// The node holds the value as its raw data; a Count's data is a 4-byte
// big-endian int32, Java's ByteBuffer.putInt (EncodeCount, DecodeCount).
// Start creates the node with the seed, and its parents as containers, if
// it is missing, as Curator's start does; an existing node is never
// overwritten. TrySet is a setData with the version of the value given.
//
// # What a watch can promise
//
// ZooKeeper's watches fire once and are set again by the next read, so a
// follower sees the node's latest value, not every value it had: several
// changes between two reads arrive as the last of them (Curator's
// listeners see the same). What this package promises:
//   - Values arrive in the order ZooKeeper applied them: each has a higher
//     Zxid than the one before (never an older value after a newer one).
//     Version grows with it, except that it starts again at 0 if the node
//     is deleted and made again.
//   - No change is missed for good: after a cut link, a lost reply, an
//     expired session or a server restart, the node is read again as soon
//     as the client is connected, so the last value always arrives.
//   - While that is not the case, Err says so: zkrecipes.ErrStale, with the reason
//     (zkrecipes.ErrSuspended while the link is down, zkrecipes.ErrSessionLost while the
//     session is gone, zkrecipes.ErrNodeDeleted while the node is missing). Curator
//     reports the same through its listeners' stateChanged; here it is a
//     call, so that a reader can check before it trusts Get.
//
// # Beyond Curator
//
//   - A deleted node is followed until someone makes it again (Curator's
//     SharedValue stops watching until its client reconnects). It is not
//     re-created: deleting a shared value is someone's decision; Set and
//     TrySet fail with zkrecipes.ErrNodeDeleted until it is made again (Curator's fail
//     with NoNode).
//   - TrySet's write is sent at most once: if its reply is lost its error
//     wraps zkrecipes.ErrOutcomeUnknown, instead of the retried write failing on its
//     own version and saying "someone else changed it" when the change was
//     its own.
//   - A Count's node whose data is not 4 bytes is an error (zkrecipes.ErrBadData)
//     from Get, not an exception in a listener.
//
// Every error of a Value or a Count names it and its path ("shared count
// /config/replicas: ...") and wraps the module's sentinels (zkrecipes.ErrStale
// while the value may not be the latest); ErrUnversioned is this
// package's own.
package shared
