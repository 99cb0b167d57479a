package discovery_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// serviceCacheGoroutines returns a function that writes n instances of a
// service of its own (as Curator's serializer writes them, without
// registrations, which are not what is measured), starts a service cache of
// it and says how many goroutines the started cache added.
func serviceCacheGoroutines(t *testing.T) func(n int) int {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	d := newDiscovery(t, c, "/scale")
	return func(n int) int {
		name := fmt.Sprintf("svc%d", n)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("i%04d", i)
		}
		testkit.CreateChildren(t, c, "/scale/"+name, ids, func(id string) []byte {
			inst := discovery.NewInstance(name)
			inst.ID, inst.Address, inst.Port = id, "10.0.0.1", port(8080)
			b, err := json.Marshal(inst)
			require.NoError(t, err)
			return b
		})
		var sc *discovery.Cache
		added := testkit.GoroutinesAdded(func() {
			var err error
			sc, err = d.NewCache(name)
			require.NoError(t, err)
			require.NoError(t, sc.Start(ctxT(t, 2*time.Minute)))
		})
		t.Cleanup(func() { _ = sc.Close() })
		got, err := sc.Instances()
		require.NoError(t, err)
		require.Len(t, got, n)
		return added
	}
}

// TestServiceCacheGoroutinesDoNotGrowWithInstances: a service cache costs
// O(1) goroutines whatever it watches (testkit.MaxGoroutinesPerWatchedNode).
func TestServiceCacheGoroutinesDoNotGrowWithInstances(t *testing.T) {
	per, line := testkit.GoroutinesPerWatchedNode(t, "service cache", serviceCacheGoroutines(t))
	t.Log(line)
	require.LessOrEqual(t, per, testkit.MaxGoroutinesPerWatchedNode, line)
}
