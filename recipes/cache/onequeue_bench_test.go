package cache_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// BenchmarkCacheOneQueueTree caches the tree shapes, three levels
// of fan-out with 100-byte data (20×10×10: 2,221 nodes; 20×20×50: 20,421
// nodes, the measurement beside Curator's caches), and reports per cached
// node the goroutines, heap and stacks the cache added, and the time to
// its first Current. With ZKR_CACHE_HEAPPROFILE=FILE it samples every
// allocation and writes the heap the loaded cache of the larger tree
// retains, after GC, to FILE (go tool pprof -sample_index=inuse_space
// -top FILE): whose each byte per node is.
func BenchmarkCacheOneQueueTree(b *testing.B) {
	profile := os.Getenv("ZKR_CACHE_HEAPPROFILE")
	for _, fan := range [][3]int{{20, 10, 10}, {20, 20, 50}} {
		b.Run(fmt.Sprintf("%dx%dx%d", fan[0], fan[1], fan[2]), func(b *testing.B) {
			cl := zktest.Standalone(b)
			c := newClient(b, cl.Addrs())
			root := "/bench/tree"
			create(b, c, root, "")
			data := bytes.Repeat([]byte("x"), 100)
			var ops []any
			flush := func(force bool) {
				for len(ops) >= 500 || force && len(ops) > 0 {
					n := min(len(ops), 500)
					_, err := c.Multi(ctxT(b, 60*time.Second), ops[:n]...)
					require.NoError(b, err)
					ops = ops[n:]
				}
			}
			nodes := 1
			for i := range fan[0] {
				p1 := fmt.Sprintf("%s/a%02d", root, i)
				ops = append(ops, &zk.CreateRequest{Path: p1, Data: data})
				for j := range fan[1] {
					p2 := fmt.Sprintf("%s/b%02d", p1, j)
					ops = append(ops, &zk.CreateRequest{Path: p2, Data: data})
					for k := range fan[2] {
						ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/c%02d", p2, k), Data: data})
					}
					nodes += 1 + fan[2]
					flush(false)
				}
				nodes++
			}
			flush(true)
			if profile != "" {
				runtime.MemProfileRate = 1
			}
			b.ResetTimer()
			for range b.N {
				before := memNow()
				ch, err := cache.New(c, root, cache.Tree(cache.AnyDepth))
				require.NoError(b, err)
				t0 := time.Now()
				require.NoError(b, ch.Start(ctxT(b, 120*time.Second)))
				load := time.Since(t0)
				after := memNow()
				if profile != "" && nodes > 20000 {
					writeHeapProfile(b, profile)
				}
				got, err := ch.Nodes()
				require.NoError(b, err)
				require.Len(b, got, nodes)
				b.ReportMetric(float64(after.heap-before.heap)/float64(nodes), "heap-B/node")
				b.ReportMetric(float64(after.inuse-before.inuse)/float64(nodes), "inuse-B/node")
				b.ReportMetric(float64(after.stack-before.stack)/float64(nodes), "stack-B/node")
				b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(nodes), "goroutines/node")
				b.ReportMetric(load.Seconds(), "load-s")
				require.NoError(b, ch.Close())
			}
		})
	}
}
