package discovery_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// A service cache costs the same few goroutines whatever the number of
// instances: it stands on one cache, whose watches reach it through one
// queue.
func TestServiceCacheOneQueueGoroutinesStayFlat(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	for _, n := range []int{10, 1000} {
		t.Run(fmt.Sprintf("instances=%d", n), func(t *testing.T) {
			base := fmt.Sprintf("/flat%d", n)
			ops := make([]any, 0, n)
			for i := range n {
				inst := discovery.NewInstance("svc")
				inst.ID, inst.Port = fmt.Sprintf("i%04d", i), port(1000+i)
				b, err := json.Marshal(inst)
				require.NoError(t, err)
				ops = append(ops, &zk.CreateRequest{Path: base + "/svc/" + inst.ID, Data: b})
			}
			_, err := c.Create(ctxT(t, 30*time.Second), base+"/svc", nil, framework.WithParents())
			require.NoError(t, err)
			for len(ops) > 0 {
				k := min(len(ops), 200)
				_, err := c.Multi(ctxT(t, 30*time.Second), ops[:k]...)
				require.NoError(t, err)
				ops = ops[k:]
			}
			before := testkit.BusyGoroutines()
			sc, err := newDiscovery(t, c, base).NewCache("svc")
			require.NoError(t, err)
			t.Cleanup(func() { _ = sc.Close() })
			require.NoError(t, sc.Start(ctxT(t, 30*time.Second)))
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				got, err := sc.Instances()
				assert.NoError(ct, err)
				assert.Len(ct, got, n)
			}, 30*time.Second, 10*time.Millisecond)
			added := testkit.GoroutinesSettled(t, before, 8)
			assert.LessOrEqual(t, added, 8, "goroutines of a service cache of %d instances", n)
			require.NoError(t, sc.Close())
		})
	}
}
