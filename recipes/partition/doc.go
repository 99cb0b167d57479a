// Package partition shares a set of work items among the live members of a
// group, each item owned by at most one member at a time under a hold: the
// goal of kazoo's SetPartitioner, done better. Curator has no partitioner
// (one builds it from a LeaderLatch per item, or a GroupMember and luck).
//
//	p, err := partition.New(client, "/sched/billing", "worker-7",
//		partition.ChildrenOf("/sched/billing-jobs"), // or partition.List("a", "b", "c")
//		partition.WithWorker(func(ctx context.Context, item string, h *hold.Hold) {
//			runJob(ctx, item, h.Token()) // until ctx is done; then return
//		}))
//	err = p.Start(ctx) // joined; items come and go in the background
//	defer p.Close()    // gives every item back
//
// # What it promises
//
//   - At most one owner. Each item is a lock (package mutex, Curator's
//     InterProcessMutex layout at <path>/items/<item>), and owning it is
//     holding that lock: a *hold.Hold with a fencing token (Token, growing from
//     each owner to the next) and a loss signal (Done, Context) that fires when
//     the link is in doubt, before the server can expire the session and so
//     before anyone else can take the item (package hold's rules).
//   - Every item owned, evenly. Members are a group (package group, Curator's
//     GroupMember layout at <path>/members/<id>); every member computes the
//     same Assign over the items and the members it sees: rendezvous hashing
//     with bounded loads, each member's share within one of every other's.
//     Once the views agree, each member holds exactly its share.
//   - Few moves. A join moves the items the newcomer weighs most, about the
//     ideal 1/N share (BenchmarkAssignJoin reports the ratio; a little over 1,
//     more with few items per member), and a leave moves only the leaver's
//     items. kazoo's SetPartitioner instead stops every member, releases
//     everything and partitions again on every change.
//   - Follows the items. ChildrenOf follows a node's children with a cache
//     (package cache): a new child is taken by its owner, a deleted one let go.
//
// # The handoff: what to do when an item goes
//
// An item goes for one of two reasons, and the Event (Subscribe) says which:
//
//   - Released: this member must give it up (a member joined and the item is
//     now its, or Close). With WithWorker, the worker's ctx is cancelled and
//     the item's lock is released only once the worker has returned: the next
//     owner starts after this one stopped. Without a worker the lock is released
//     at once: stop working on the item when its Hold's Done fires, which is
//     before the next owner can have it.
//   - Lost: the hold ended on its own (the link in doubt, the session lost, the
//     lock node deleted). The worker's ctx, and the Hold's Done, fired at the
//     loss, before the server could grant the item to anyone else: stop at
//     once. Work still running after that is not protected by the lock; the
//     fencing token is what protects it (hand Token to what you write, have it
//     refuse lower tokens, or write ZooKeeper state through Hold.Fenced).
//     The member takes the item again, if it is still its own, once its
//     session is back.
//
// An Acquired item is the member's from the event on, under its Hold; the
// worker, if any, has started.
//
// # What it costs
//
// A member holds one lock node per owned item and queues (one node, one
// watch, one goroutine) for each item it should own but does not yet hold. A
// link in doubt ends every hold at once (safety first), so every item of the
// member is given back and taken again once the link is back: with thousands
// of items, use the session-only error policy (framework.SessionOnlyPolicy),
// which ends holds only with the session, if your work is fenced anyway.
// Assign is O(items × members × log): thousands of items over tens of
// members is a few milliseconds per change.
//
// Every error names the recipe and the partition's path ("partition
// /sched/billing: ...") and wraps the module's sentinels.
package partition
