package cache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// makeKids makes n children under path, data "d", in a few multis.
func makeKids(t *testing.T, c *framework.Client, path string, n int) {
	t.Helper()
	create(t, c, path, "")
	ops := make([]any, 0, n)
	for i := range n {
		ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/n%04d", path, i), Data: []byte("d")})
	}
	for len(ops) > 0 {
		k := min(len(ops), 200)
		_, err := c.Multi(ctxT(t, 30*time.Second), ops[:k]...)
		require.NoError(t, err)
		ops = ops[k:]
	}
}

// A cache costs the same few goroutines whatever it watches: its watches'
// events reach it through one queue, not a goroutine each. With or
// without a namespace (which the events' paths lose on the way).
func TestCacheOneQueueGoroutinesDoNotGrowWithNodes(t *testing.T) {
	cl := zktest.Standalone(t)
	for _, ns := range []string{"", "ns"} {
		var opts []framework.Option
		if ns != "" {
			opts = append(opts, framework.WithNamespace(ns))
		}
		c := newClient(t, cl.Addrs(), opts...)
		for _, n := range []int{10, 1000} {
			t.Run(fmt.Sprintf("ns=%s/nodes=%d", ns, n), func(t *testing.T) {
				path := fmt.Sprintf("/flat/%d", n)
				makeKids(t, c, path, n)
				before := testkit.BusyGoroutines()
				ch := newCache(t, c, path, cache.Tree(cache.AnyDepth))
				nodes, err := ch.Nodes()
				require.NoError(t, err)
				require.Len(t, nodes, n+1)
				added := testkit.GoroutinesSettled(t, before, 4)
				assert.LessOrEqual(t, added, 4, "goroutines of a cache of %d nodes", n+1)
				// Its watches still fire: a change of the last node reaches it.
				last := fmt.Sprintf("%s/n%04d", path, n-1)
				set(t, c, last, "changed")
				require.Eventually(t, func() bool {
					got, err := ch.Nodes()
					return err == nil && string(got[len(got)-1].Data) == "changed"
				}, 30*time.Second, 10*time.Millisecond)
				require.NoError(t, ch.Close())
			})
		}
	}
}
