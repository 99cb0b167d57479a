// Package cache keeps a local, always-current view of ZooKeeper nodes, as
// Apache Curator's CuratorCache and, before it, NodeCache,
// PathChildrenCache and TreeCache. One type, Cache, in three shapes:
//
//	cache.New(client, "/config/app", cache.Single())   // one node: NodeCache
//	cache.New(client, "/services/api", cache.Children()) // its children: PathChildrenCache
//	cache.New(client, "/jobs", cache.Tree(2))           // a subtree to a depth: TreeCache
//
// Start reads the view and returns once it is current. From then on Get,
// Children and Nodes answer from memory, and Subscribe delivers a Snapshot
// of the view followed by Created, Changed and Deleted events, each with
// the node's data and Stat. Any node Curator or another client writes is
// seen the same way: the cache writes nothing.
//
// # What one-shot watches can promise
//
// ZooKeeper 3.8 has persistent watches, which CuratorCache uses, but
// go-zookeeper 1.0.4 does not speak them: each watch fires once and is set
// again by the read that follows. So the cache sees states, not every
// write: two changes of a node between two reads arrive as one Changed
// with the second state (Curator's TreeCache sees the same). What it
// promises:
//
//   - Per node, events come in the order ZooKeeper made the changes:
//     Changed only with a higher Mzxid than the node had, never an older
//     state after a newer one. A node deleted and made again (a new Czxid)
//     is a Deleted and then a Created, never a Changed. Across nodes, the
//     events of what one round of reads found are ordered by the zxid of
//     the change each reports (Czxid for Created, Mzxid for Changed, the
//     parent's Pzxid that first showed it gone, at or after the delete,
//     for Deleted).
//   - Nothing is missed for good, nothing is reported twice. After any gap
//     (a cut link, a one-way fault, an expired session, a server restart)
//     the cache syncs the server it reconnected to with the leader
//     (Client.Sync), reads every node again, and emits exactly the events
//     that take the old view to the new one. A follower that lags must not
//     show an older view. ZooKeeper refuses a connection to a server behind
//     the last zxid the client saw, but only within a session: after an
//     expiry go-zookeeper forgets that zxid, and a follower with local
//     sessions (localSessionsEnabled) makes a new one without catching up.
//     So the resync's sync is what makes sure of it; every read is
//     compared by Stat (Czxid, Mzxid, the parent's Pzxid) with what the
//     view holds, so that an older answer never replaces a newer one; and
//     the absence of the cache's own path, which no Stat dates and which
//     empties the view, counts only from a read on the session that sync
//     was made on (integration/internal/lagread tests it).
//   - It says when the view may be stale, in the vocabulary of holds: a
//     Stale event and Err wrapping zkrecipes.ErrStale with zkrecipes.ErrSuspended
//     when the link drops, then zkrecipes.ErrSessionLost if the session is
//     lost; a Current event, and Err nil, once it has read everything
//     again. The view is stale from Suspended on whatever the client's
//     error policy: a view is not a hold, but its reader should know.
//
// Applying a subscription's events to its Snapshot (and replacing the
// view at each Overflow) gives the cache's view, event for event.
//
// # What it costs
//
// One watch per node and per kind: a data watch on every node in the view,
// and a child watch on every node above the depth (for Children, one on
// the path). Each costs a request to set after every change and every
// gap, a registration in the server's watch table, and go-zookeeper's
// registration (a buffered channel, about 260 bytes). No goroutine: the
// watches deliver their events into one queue the cache owns
// (framework.Into), which the cache's one engine goroutine reads, so a
// cache costs the same few goroutines at twenty nodes as at twenty
// thousand. BenchmarkCacheOneQueueTree measures about 970 bytes of heap per
// node of a tree of 20,421 nodes with 100-byte data (about 1,200 counting
// the room left free in the heap's spans), and no goroutine stacks:
// go-zookeeper's two registrations about 540 bytes, the data and the
// path about 145, the node's entry in the view about 195, the client's
// routes of its watches about 75. On a tree of N nodes:
//
//   - the first read, and every resync after a gap, is about 2N requests
//     (up to 64 in flight at a time), and as many watches set again after
//     an expired session;
//   - a change costs one read (and a child's creation or deletion one
//     listing of its parent, plus a read of the new child);
//   - watches the cache no longer needs (after Close, or of a node that
//     left the view) stay registered in the session until their node
//     changes or the session ends: go-zookeeper cannot remove one.
//
// For a tree of many thousands of nodes, cache what you read (a shape of
// the least depth that serves), or consider WithoutData, which keeps the
// Stats but not the data.
//
// # Slow readers
//
// Event delivery never waits for a reader: each subscription queues up to
// the buffer size (WithBufferSize, DefaultBufferSize by default). A reader
// that falls further behind loses the queued events and gets one Overflow
// event in their place, which carries the whole view after them; the
// events that follow apply to it. The cache itself, and the client, go on
// at their pace.
//
// # Against Curator
//
// CuratorCache's listeners get created/changed/deleted with old and new
// data; TreeCache's and PathChildrenCache's add CONNECTION_SUSPENDED,
// CONNECTION_RECONNECTED and CONNECTION_LOST, and INITIALIZED. Here they
// are Created/Changed/Deleted (Old on Changed), Stale (with the reason)
// and Current, and Start returning. Beyond Curator: the view is re-read
// and reconciled after every gap, not only after a new session (Curator's
// PathChildrenCache famously missed events across a reconnect); a node
// deleted and made again is never reported as a change; the view never
// goes back to an older state after a reconnect to a lagging follower.
//
// Every error names the cache and its path ("cache /services/api: ...")
// and wraps the module's sentinels, zkrecipes.ErrStale among them.
package cache
