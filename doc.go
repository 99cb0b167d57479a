// Package zkrecipes is a library of Apache Curator's ZooKeeper recipes for
// Go: locks, leader election, barriers and shared values that Go and Java
// services can use on the same paths, for coordination where correctness
// comes before throughput. This package holds no code; it is the map.
//
// # Where to start
//
// Every recipe stands on one framework.Client, the session and the
// requests (Curator's CuratorFramework):
//
//	client, err := framework.Dial(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
//	...
//	defer client.Close()
//	m, err := mutex.New(client, "/locks/billing")
//	h, err := m.Acquire(ctx)
//	...
//	defer h.Release()
//	// work under h.Context(ctx); hand h.Token() to what you write to
//
// # Which recipe for which need
//
//	need                                   package / type                 Curator class
//	one holder at a time, fair, reentrant  recipes/mutex.Mutex            InterProcessMutex
//	  ... taken in one goroutine, given    recipes/mutex.SemaphoreMutex   InterProcessSemaphoreMutex
//	      back in another
//	  ... several locks as one             recipes/mutex.MultiLock        InterProcessMultiLock
//	  ... once per key, no Mutex kept      recipes/mutex.Acquire          InterProcessMutex
//	readers share, writers exclude         recipes/rwlock.RWLock          InterProcessReadWriteLock
//	at most N holders                      recipes/semaphore.Semaphore    InterProcessSemaphoreV2
//	one leader, a handle on its term       recipes/leader.Latch           LeaderLatch
//	one leader running a function          recipes/leader.Selector        LeaderSelector
//	who leads, as a stream                 recipes/leader.Observe         -
//	block until someone lifts it           recipes/barrier.Barrier        DistributedBarrier
//	N members start and end together       recipes/barrier.DoubleBarrier  DistributedDoubleBarrier
//	wait until N things happened           recipes/countdown.Countdown    - (Redisson's RCountDownLatch)
//	a value or count all see change        recipes/shared.Value, Count    SharedValue, SharedCount
//	a counter, compare-and-set             recipes/counter.Long, ...      DistributedAtomicLong, ...
//	a local view of nodes, with events     recipes/cache.Cache            CuratorCache, NodeCache, ...
//	a node kept through session loss       recipes/persistent.Node        PersistentNode, PersistentTtlNode
//	group membership                       recipes/group.Member           GroupMember
//	register, find, pick service instances recipes/discovery.Discovery    ServiceDiscovery (curator-x-discovery)
//	share work items among live members    recipes/partition.Partitioner  - (kazoo's SetPartitioner)
//
// Each package's doc tours its recipe, with runnable examples.
//
// # The guarantees
//
//   - Every recipe is wire-compatible with Curator 5.4 on the same path.
//   - A holder is told (hold.Hold.Done) as soon as its hold can no longer be
//     trusted: before the server can expire its session and grant it to
//     anyone else.
//   - Every hold carries a fencing token that grows from each holder to the
//     next; hold.Hold.Fenced writes commit only while the hold is held.
//   - Nothing is left behind: a failed or abandoned acquire deletes its node.
//   - A write that cannot know whether it was applied says so
//     (zkrecipes.ErrOutcomeUnknown); none is applied twice.
//
// # One vocabulary
//
// Every recipe is made with New…(client, path, ..., options...), takes a
// context on every call that talks to the server, and ends with an
// idempotent Close. Options are checked by the compiler: each recipe has
// its own option type. The module's errors are declared once, in this
// package (errors.go), and every recipe's error names the recipe and its
// path ("mutex /locks/billing: would block") while errors.Is finds the
// sentinel. The full table is docs/vocabulary.md.
package zkrecipes
