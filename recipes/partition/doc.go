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
//     same Assign over the items, the members and the items' current owners
//     it sees (the first lock node of each item holds its owner's id; a cache
//     follows them), each member's share within one of every other's. Once
//     the views agree, each member holds exactly its share.
//   - Few moves. Assign is sticky: an item stays with its owner unless the
//     spread needs it elsewhere. A join moves the newcomer's share,
//     len(items)/(members+1), and nothing else; a leave moves only the
//     leaver's items (BenchmarkAssignJoin and BenchmarkAssignLeave report
//     the ratio to the ideal share: at most 1.05 over the sizes they try,
//     where stateless rendezvous hashing with bounded loads moved up to 1.7
//     times it). kazoo's SetPartitioner instead stops every member, releases
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
// # Why the members agree, and converge
//
// The members do not talk: each computes Assign from what it reads (the
// members' nodes, the items, the items' lock nodes), and takes the items
// Assign gives it and gives up the others. Views differ for a moment
// whenever something changes, and the owners Assign reads change because
// of what it answered. Three things make that safe and make it settle:
//
//   - Safety never depends on the views: an item is a lock, and only its
//     holder owns it. Two members that both think an item theirs both queue
//     for it; one holds it, the other waits.
//   - Assign is stable on the way to its answer (TestAssignIsStableOnTheWayToItsAnswer):
//     for owners O it answers A, and for any owners between O and A (some
//     items moved to the member A gives them, some given up and not yet
//     taken) it answers A again. So a member that reads the moves of the
//     others halfway, or late, computes the same A, and its own moves do
//     not change anyone's mind. The extra slots (r = items mod members) go
//     to the members over len(items)/members first: a bit that moving
//     towards A never flips for the members it matters to (Assign's
//     documentation), where ranking by the count itself would swap them
//     back and forth as members catch up.
//   - A member acts on every change of what it reads, and always towards
//     its latest answer: it releases a held item that is not its own
//     (after its worker returned), and withdraws a queued acquire of an
//     item that stopped being its own (the acquire is cancelled and its
//     lock node deleted; if its turn came first, the item is released at
//     once, unseen). So once the views agree (the same members and items,
//     and every lock node of a move from an older answer gone), every
//     member computes the same A, nothing moves but towards it, and A,
//     once reached, is its own answer: each member holds exactly its share
//     and nothing moves again.
//
// While views differ, a member may queue for an item another member holds
// and keeps; it waits, and withdraws once its view catches up. A member cut
// off from a stable partition keeps its member node while its session
// lives: its items, given up
// when its holds ended, stay unowned and are its own again (nobody else
// has room for them), so a blip does not move them. Once its session ends,
// the others take them, and it comes back as a newcomer.
//
// # What it costs
//
// A member holds one lock node per owned item, at no goroutine per item
// (one engine.Watcher follows every hold's node and loss signal, and the
// member learns of a hold's end without a goroutine: a thousand items held
// cost what ten do), and queues (one node, one
// watch, one goroutine) for each item it should own but does
// not yet hold, again after a failure at the pace of the client's retry
// policy (framework.WithRetryPolicy). To read the owners it caches every item's lock directory (package cache,
// Tree(2) at <path>/items): one child watch per item and one data watch per
// lock node, in every member, and a look at the owners after every grant
// and release anywhere in the partition. A
// link in doubt ends every hold at once (safety first), so every item of the
// member is given back and taken again once the link is back: with thousands
// of items, use the session-only error policy (framework.SessionOnlyPolicy),
// which ends holds only with the session, if your work is fenced anyway.
// Assign is O(items × members × log): thousands of items over tens of
// members is a few milliseconds per change, and the members compute it
// again at every change of the owners they read.
//
// Every error names the recipe and the partition's path ("partition
// /sched/billing: ...") and wraps the module's sentinels.
package partition
