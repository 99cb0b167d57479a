// Package barrier holds Apache Curator's two barriers over ZooKeeper,
// wire-compatible with Curator 5.4 on the same paths, so that Go and Java
// processes can share one barrier:
//
//   - Barrier (Curator's DistributedBarrier): one node. Set makes it,
//     Remove deletes it, Wait blocks until it is gone.
//   - DoubleBarrier (Curator's DistributedDoubleBarrier): memberQty
//     members Enter together and Leave together.
//
// # Protocol
//
// The barrier is a single persistent node at path (parents made as
// containers), whose data is the participant id (Curator's default data:
// the local address).
//
// The double barrier is a directory of members:
//
//	path/<uuid>   one ephemeral node per member, data = participant id
//	path/ready    a persistent node, made by whichever member first sees
//	              memberQty members, deleted by every leaver at the end
//
// A member enters by making its node and waiting until path/ready exists,
// or until it sees memberQty members itself and makes path/ready. It
// leaves as Curator does: the members sorted by name, the lowest waits for
// the highest to go, every other member deletes its own node and waits for
// the lowest to go; the lowest deletes its node last. Every wake-up lists
// the members again and decides afresh: a watch event, a reconnect or a
// spurious wake proves nothing by itself (Curator 5.4's enter returns on any
// wake, GH-1290; its leave returns when a single member that is not its own
// is left, even if that one has not begun to leave).
//
// A path can serve round after round, as in Curator, since the last
// leaver deletes path/ready. Curator's design leaves one hazard, kept for
// compatibility: a ready node left behind by a round that was abandoned
// (every member timed out, or its leavers died before deleting it) lets
// the next round's members in at once. Where that matters, give each round
// a path of its own.
//
// # Where it goes beyond Curator
//
// A member's node belongs to its session. A member whose session is lost
// while it waits or while it is entered is not a member any more; Enter
// and Leave then fail with zkrecipes.ErrSessionLost (zkrecipes.ErrNodeDeleted when someone
// else deleted the node), never report success: Curator's leave returns
// normally in that case. Whatever ends an Enter or a Leave early (ctx,
// Close, an error) deletes the member's node, guaranteed, where Curator's
// timed enter leaves it behind to be counted by the others.
package barrier
