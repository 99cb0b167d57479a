// Package barrier holds Apache Curator's two barriers over ZooKeeper,
// wire-compatible with Curator 5.4 on the same paths, so that Go and Java
// processes can share one barrier:
//
//   - Barrier (Curator's DistributedBarrier): one node. Set makes it,
//     Remove deletes it, Wait blocks until it is gone.
//   - DoubleBarrier (Curator's DistributedDoubleBarrier): memberQty
//     members Enter together and Leave together.
//
// A gate, and a phase of three members:
//
//	gate, err := barrier.New(client, "/jobs/nightly/gate")
//	err = gate.Set(ctx)    // workers' Wait blocks while the node exists
//	err = gate.Wait(ctx)   // elsewhere: returns once it is removed (or ctx ends)
//	err = gate.Remove(ctx)
//
//	phase, err := barrier.NewDouble(client, "/jobs/nightly/phase-1", 3)
//	err = phase.Enter(ctx) // returns once 3 members have arrived
//	// ... the phase's work ...
//	err = phase.Leave(ctx) // returns once every member has left
//
// # Protocol
//
// The barrier is a single persistent node at path (parents made as
// containers), whose data is the participant id (Curator's default data:
// the local address).
//
// The double barrier is a directory of members:
//
//	path          a container; its data stays empty, and its data version
//	              grows by one with every ready node our members make
//	path/<uuid>   one ephemeral node per member, data = participant id
//	path/ready    a persistent node, made by whichever member first sees
//	              memberQty members; its data is the participant id of
//	              the member that made it or last joined its round
//
// A member enters by making its node and waiting until path/ready exists,
// or until it sees memberQty members itself and makes path/ready. It
// leaves in Curator's order: the members sorted by name, the lowest waits
// for the highest to go, every other member deletes its own node and
// waits for the lowest to go; the lowest, alone, goes last. Every wake-up
// looks again and decides afresh: a watch event, a reconnect or a
// spurious wake proves nothing by itself (Curator 5.4's enter returns on
// any wake, GH-1290; its leave returns when a single member that is not
// its own is left, even if that one has not begun to leave).
//
// # One path, round after round
//
// A path serves round after round: a batch job's phases meet on the same
// barrier every night. A round is named by its ready node's czxid, which
// each member keeps from Enter (the node it found, or made and then read).
// These rules make the rounds follow one another cleanly:
//
//   - The last member ends the round in one multi that deletes its own node
//     and the ready node at the version it read. So the ready node goes
//     exactly when the round's last member node does, and a member that
//     joined in between (see below) makes the multi fail whole.
//   - A member whose own node is gone is done once the ready node of its
//     round is gone (or another stands: another round's). It never waits
//     on a member node made after that: one is the next round's, whose
//     member may be waiting in Enter for this one, which would wait for
//     it forever (the deadlock of this package's first version: two
//     members looping Enter/Leave on one path stuck within a few dozen
//     rounds). When no member node is left and its round's ready node
//     still stands, the last member's session ended before it could end
//     the round: the member deletes the ready node itself.
//   - Enter reads the ready node before it lists the members. A member
//     that finds it absent and then counts memberQty nodes counts only
//     nodes made after the last round ended (its last member node went
//     with its ready node).
//   - A member that arrives while a round's ready node stands joins that
//     round and enters at once, as in Curator (memberQty is a threshold,
//     not a limit), but only while one of the round's members is still in
//     (a member node at least as old as the ready node's last change), and
//     only by a write: a set of the ready node at the version it read,
//     which the last member's multi checks, so that a round cannot end
//     behind the back of a member that has just joined it. A ready node
//     with no member of its round left (every member gave up, or the last
//     one died before it could end the round) is over: the arrival deletes
//     it and counts members as for a new round. Curator, and this
//     package's first version, let the next round's first member in by
//     such a node at once, alone.
//   - Every ready node starts at version 0, so a version alone cannot tell
//     a ready node left behind from the next round's, made between a
//     member's read and its write: a member that had read the old one
//     would delete the new one (its round's members would then leave
//     without waiting for each other), or join a round that is over by
//     bumping the next one. So our members make a ready node in one multi
//     with a bump of the directory's (path's) data version, and every
//     other write of a ready node they read (a join, the delete of one
//     left behind) is a multi that also checks the directory's version,
//     read before the ready node was read again: it hits the node read,
//     or nothing. A member in Enter also checks that its own node still
//     stands, which keeps the directory (a container) from being reaped
//     and made again, its version back at 0, in between. These multis are
//     safe to resend after a lost reply: resent once applied, one of
//     their checks fails and nothing is applied.
//
// Why no Leave returns early: it returns nil only once its round's ready
// node is gone, and that node goes only by a write that checks its
// version as read just before a listing showing no other member node of
// the round (the last member's multi, or the delete of one left behind).
// Every member that entered was either there when the ready node was made
// or joined by bumping its version, so each one still in shows in that
// listing, or its join fails the write. Why no member waits forever: while
// its round's ready node stands, every member node that stands belongs to
// that round (a member of it, or an arrival that will join it or find it
// over), and goes when its member leaves, gives up or dies; once the ready
// node is gone, nobody waits on anything.
//
// Leave returns nil only once the server has ended the round: the ready
// node gone, as a read says. A delete of it handed to the background is
// not enough (a member entering again at once would find the old ready
// node, and before the fix entered by it alone).
//
// What remains: a member whose session has died keeps its node until the
// server expires the session. A round whose other members gave up while
// such a node stands still looks on to an arrival, which joins it and
// enters, and its Leave then waits for that node to go. A member's node
// whose delete is still on its way (it gave up while its link was down)
// counts as a member until the delete lands; the member's own next Enter
// deletes it first. The delete of a ready node left behind by a member in
// Leave (whose own node is gone) has nothing of its own to keep the
// directory up: should the server reap the empty directory and a new
// round make it, and a ready node in it, between that member's read and
// its write, with the same two versions as read, the write would take the
// new round's ready node. Reaping runs once a minute by default
// (znode.container.checkIntervalMs); the window is one round trip.
//
// Curator members on the same path see the same layout and count the same
// nodes, but do differently: a Curator member that arrives while the
// ready node stands enters at once, whether or not anyone is still in,
// without the write that tells the last member it joined; it makes a
// ready node without the bump of the directory's version; and it deletes
// the ready node unconditionally at the end of its leave, even while other
// members are still in (its leave returns when one node that is not its
// own is left). Our members take a ready node gone, or replaced, as the
// end of their round; a member whose node is still there then deletes it
// and returns. Mixing Go and Curator members on one path works as in
// Curator, with Curator's hazards.
//
// # Where it goes beyond Curator
//
// Set and Remove send their write at most once. Curator's (and the
// client's own) retry resends a create or a delete whose reply was lost,
// and the resend can redo it over another client's call made in between:
// a removal resent takes the barrier another client has set again since,
// a set resent sets the barrier another client has removed since, and each
// reports success. Remove reads the barrier's czxid before it deletes:
// after a lost reply, that barrier gone (whoever removed it) is success,
// and the same one still there means the delete was not applied, so it is
// sent again. Set, after a lost reply, succeeds if the barrier stands
// (whoever set it); if it does not, Set cannot tell its own set, removed
// since, from a set never applied, and says so with zkrecipes.ErrOutcomeUnknown.
//
// A member's node belongs to its session. A member whose session is lost
// while it waits or while it is entered is not a member any more; Enter
// and Leave then fail with zkrecipes.ErrSessionLost (zkrecipes.ErrNodeDeleted when someone
// else deleted the node), never report success: Curator's leave returns
// normally in that case. Whatever ends an Enter or a Leave early (ctx,
// Close, an error) deletes the member's node, guaranteed, where Curator's
// timed enter leaves it behind to be counted by the others.
package barrier
