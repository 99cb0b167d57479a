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

// BenchmarkCacheHeap20k caches a tree of 20 x 20 x 50 = 20,421 nodes of
// 100 bytes (the shape of make bench-watch) and reports the heap and
// stacks the cache holds per node once loaded, and the time to load it.
// With ZKR_CACHE_HEAPPROFILE=FILE it writes the retained heap, sampled
// at every allocation, to FILE after GC: read it with
// go tool pprof -sample_index=inuse_space -top FILE.
func BenchmarkCacheHeap20k(b *testing.B) {
	cl := zktest.Standalone(b)
	c := newClient(b, cl.Addrs())
	const root = "/bench/heap20k"
	data := make([]byte, 100)
	mid := make([]string, 20)
	for i := range mid {
		mid[i] = fmt.Sprintf("a%02d", i)
	}
	leaves := make([]string, 50)
	for i := range leaves {
		leaves[i] = fmt.Sprintf("c%02d", i)
	}
	paths := []string{}
	for _, a := range mid {
		paths = append(paths, root+"/"+a)
		for _, m := range mid {
			paths = append(paths, root+"/"+a+"/"+m)
			for _, l := range leaves {
				paths = append(paths, root+"/"+a+"/"+m+"/"+l)
			}
		}
	}
	create(b, c, root, "")
	for start := 0; start < len(paths); start += 200 {
		var ops []any
		for _, p := range paths[start:min(start+200, len(paths))] {
			ops = append(ops, &zk.CreateRequest{Path: p, Data: data, Acl: zk.WorldACL(zk.PermAll)})
		}
		_, err := c.Multi(ctxT(b, time.Minute), ops...)
		require.NoError(b, err)
	}
	const nodes = 1 + 20 + 20*20 + 20*20*50
	profile := os.Getenv("ZKR_CACHE_HEAPPROFILE")
	if profile != "" {
		runtime.MemProfileRate = 1
	}
	b.ResetTimer()
	for range b.N {
		before := memNow()
		ch, err := cache.New(c, root, cache.Tree(cache.AnyDepth))
		require.NoError(b, err)
		t0 := time.Now()
		require.NoError(b, ch.Start(ctxT(b, 2*time.Minute)))
		load := time.Since(t0)
		after := memNow()
		if profile != "" {
			f, err := os.Create(profile)
			require.NoError(b, err)
			require.NoError(b, pprof.Lookup("heap").WriteTo(f, 0))
			require.NoError(b, f.Close())
		}
		got, err := ch.Nodes()
		require.NoError(b, err)
		require.Len(b, got, nodes)
		b.ReportMetric(float64(after.heap-before.heap)/float64(nodes), "heap-B/node")
		b.ReportMetric(float64(after.inuse-before.inuse)/float64(nodes), "inuse-B/node")
		b.ReportMetric(float64(after.stack-before.stack)/float64(nodes), "stack-B/node")
		b.ReportMetric(float64(load.Milliseconds()), "load-ms")
		require.NoError(b, ch.Close())
	}
}
