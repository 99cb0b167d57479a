// Package peers measures zkrecipes beside its peers, go-zookeeper's zk.Lock
// and Curator 5.4, on the same workloads against one throwaway server, and
// writes the ratios into docs/benchmarks.md:
//
//	make bench-peers
//
// Each workload runs on up to three networks (-peers.nets): loopback; a
// proxy that holds every byte 0.5 ms each way (a round trip of about 1 ms,
// as to a server in the same data centre); and loopback with the server's
// JVM pinned to CPU 0 and every client process to CPU 1, where the server
// alone is the limit. zkr-bench also reports the client's own CPU time and
// allocations per operation, for zkrecipes and zk.Lock.
//
// zkrecipes and zk.Lock run through zkr-bench (--peer zklock), Curator
// through the Java agent of the interoperability tests, whose mutex-bench
// runs the same loops. Each round runs every peer once per workload, in an
// order that rotates from round to round (the server's JIT and the VM's
// drift favour whoever runs later); ratios are taken within a round and the
// table shows their median, never absolute numbers from different runs.
//
// It is this repository's own benchmark, not library API: it sits under
// integration/internal so that nothing outside the repository can import it.
package peers
