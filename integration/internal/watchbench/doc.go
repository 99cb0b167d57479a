// Package watchbench measures what the watching recipes cost at scale,
// beside Curator 5.4 on the same server and the same tree, and writes the
// table into docs/benchmarks.md:
//
//	make bench-watch                     # 20 × 20 × 50 = 20,421 nodes
//	make bench-watch SHAPE=20x20x4       # a quick run, 2,021 nodes, printed only
//
// Three workloads, each on one throwaway ZooKeeper 3.8 server:
//
//   - a tree of nodes of 100 bytes, cached whole: the library's cache in its
//     Tree shape at AnyDepth, Curator's CuratorCache and its TreeCache;
//   - a service of 1,000 instances: the library's discovery cache, Curator's
//     ServiceCache;
//   - a partitioner of 1,000 items over 5 members, all in this process.
//
// Each peer runs on a session of its own, made for the measurement and
// closed after it, so the server's watch count (mntr's zk_watch_count,
// before and after) is the peer's alone. For the Go peers the figures are
// runtime.MemStats deltas after two GCs (HeapInuse, StackInuse) and
// runtime.NumGoroutine, from before New to after Start returned; for Curator
// the Agent of the interoperability tests (internal/curator, WatchBench.java)
// reports its used heap after System.gc() and its live thread count, before
// the cache was built and once it said it was initialized, in a JVM run as
// deployed (C2, 1 GB heap, serial collector). Event latency is a write of a
// node picked at random, by the peer's own session, to the peer's event for
// that node.
//
// It is this repository's own benchmark, not library API: it sits under
// integration/internal so that nothing outside the repository can import it.
package watchbench
