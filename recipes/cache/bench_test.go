package cache_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// BenchmarkCacheMemory caches a tree of nodes with 16-byte data (1000
// children, each with one child), and reports what the cache costs per
// cached node: heap bytes and goroutine stacks (its watches' waiters),
// measured before and after Start, and the time to load the tree.
func BenchmarkCacheMemory(b *testing.B) {
	cl := zktest.Standalone(b)
	c := newClient(b, cl.Addrs())
	const kids = 1000
	ops := make([]any, 0, 2*kids)
	for i := range kids {
		p := fmt.Sprintf("/bench/mem/n%04d", i)
		ops = append(ops, createOp(p), createOp(p+"/leaf"))
	}
	create(b, c, "/bench/mem", "")
	for len(ops) > 0 {
		n := min(len(ops), 200)
		_, err := c.Multi(ctxT(b, 30*time.Second), ops[:n]...)
		require.NoError(b, err)
		ops = ops[n:]
	}
	nodes := 1 + 2*kids
	b.ResetTimer()
	for range b.N {
		before := memNow()
		ch, err := cache.New(c, "/bench/mem", cache.Tree(cache.AnyDepth))
		require.NoError(b, err)
		t0 := time.Now()
		require.NoError(b, ch.Start(ctxT(b, 60*time.Second)))
		load := time.Since(t0)
		after := memNow()
		got, err := ch.Nodes()
		require.NoError(b, err)
		require.Len(b, got, nodes)
		b.ReportMetric(float64(after.heap-before.heap)/float64(nodes), "heap-B/node")
		b.ReportMetric(float64(after.stack-before.stack)/float64(nodes), "stack-B/node")
		b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(nodes), "goroutines/node")
		b.ReportMetric(float64(load.Microseconds())/float64(nodes), "load-µs/node")
		require.NoError(b, ch.Close())
	}
}

func createOp(path string) any {
	return &zk.CreateRequest{Path: path, Data: []byte("0123456789abcdef")}
}

type mem struct {
	heap, inuse, stack uint64 // HeapAlloc, HeapInuse (with the spans' free room), StackInuse
	goroutines         int
}

// writeHeapProfile writes the heap profile to file.
func writeHeapProfile(b *testing.B, file string) {
	f, err := os.Create(file)
	require.NoError(b, err)
	require.NoError(b, pprof.Lookup("heap").WriteTo(f, 0))
	require.NoError(b, f.Close())
}

func memNow() mem {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return mem{heap: ms.HeapAlloc, inuse: ms.HeapInuse, stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
}

// BenchmarkCacheEventLatency measures the time from a write's reply to its
// event on a subscription of a cache of the written node's parent.
func BenchmarkCacheEventLatency(b *testing.B) {
	cl := zktest.Standalone(b)
	c := newClient(b, cl.Addrs())
	writer := newClient(b, cl.Addrs())
	create(b, c, "/bench/lat/n", "")
	ch := newCache(b, c, "/bench/lat", cache.Children())
	sub := ch.Subscribe()
	defer sub.Close()
	<-sub.Changes() // the snapshot
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		_, err := writer.Set(ctxT(b, 10*time.Second), "/bench/lat/n", []byte(fmt.Sprint(i)), -1)
		require.NoError(b, err)
		t0 := time.Now()
		for ev := range sub.Changes() {
			if ev.Type == cache.Changed && string(ev.Node.Data) == fmt.Sprint(i) {
				break
			}
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "event-µs")
}
