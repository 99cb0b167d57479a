package cache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// cacheGoroutines returns a function that makes a tree of n children under
// a path of its own, caches it (Tree, AnyDepth) on c and says how many
// goroutines the started cache added.
func cacheGoroutines(t testing.TB) func(n int) int {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	return func(n int) int {
		root := fmt.Sprintf("/scale/n%d", n)
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("c%04d", i)
		}
		testkit.CreateChildren(t, c, root, names, func(string) []byte { return []byte("0123456789") })
		var ch *cache.Cache
		added := testkit.GoroutinesAdded(func() {
			var err error
			ch, err = cache.New(c, root, cache.Tree(cache.AnyDepth))
			require.NoError(t, err)
			require.NoError(t, ch.Start(ctxT(t, 2*time.Minute)))
		})
		t.Cleanup(func() { _ = ch.Close() })
		got, err := ch.Nodes()
		require.NoError(t, err)
		require.Len(t, got, n+1)
		return added
	}
}

// TestCacheGoroutinesDoNotGrowWithNodes: a cache costs O(1) goroutines
// whatever it watches (testkit.MaxGoroutinesPerWatchedNode).
func TestCacheGoroutinesDoNotGrowWithNodes(t *testing.T) {
	per, line := testkit.GoroutinesPerWatchedNode(t, "cache", cacheGoroutines(t))
	t.Log(line)
	require.LessOrEqual(t, per, testkit.MaxGoroutinesPerWatchedNode, line)
}

// BenchmarkCacheGoroutinesPerNode reports the goroutines a cache adds per
// watched node, between 10 and 1,000 nodes.
func BenchmarkCacheGoroutinesPerNode(b *testing.B) {
	for range b.N {
		per, _ := testkit.GoroutinesPerWatchedNode(b, "cache", cacheGoroutines(b))
		b.ReportMetric(per, "goroutines/node")
	}
}
