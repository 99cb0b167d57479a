package discovery_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// nextEvent takes the next event of sub, within a deadline.
func nextEvent(t *testing.T, sub *framework.Subscription[discovery.CacheEvent]) discovery.CacheEvent {
	t.Helper()
	select {
	case ev, ok := <-sub.Changes():
		require.True(t, ok, "the subscription ended")
		return ev
	case <-time.After(30 * time.Second):
		require.FailNow(t, "no event within 30s")
	}
	panic("unreachable")
}

func ids(insts []discovery.Instance) []string {
	out := make([]string, len(insts))
	for i, inst := range insts {
		out[i] = inst.ID
	}
	return out
}

// A service cache's subscriber is told the instances as they stand once,
// in one Snapshot, then each instance added, updated and removed.
func TestCacheSubscriberIsToldTheCurrentStateOnceThenEachChange(t *testing.T) {
	cl := zktest.Standalone(t)
	reg := newDiscovery(t, newClient(t, cl.Addrs()), "/services")
	ctx := ctxT(t, 30*time.Second)
	register := func(id string, p int) discovery.Instance {
		inst := discovery.NewInstance("seen")
		inst.ID, inst.Port = id, port(p)
		require.NoError(t, reg.Register(ctx, inst))
		return inst
	}
	register("a", 1)
	register("b", 2)
	c, err := newDiscovery(t, newClient(t, cl.Addrs()), "/services").NewCache("seen")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(ctx))

	sub := c.Subscribe()
	defer sub.Close()
	first := nextEvent(t, sub)
	assert.Equal(t, discovery.Snapshot, first.Type)
	assert.Equal(t, []string{"a", "b"}, ids(first.Instances))
	assert.NoError(t, first.Err)

	inst := register("c", 3)
	ev := nextEvent(t, sub)
	assert.Equal(t, discovery.Added, ev.Type, "no event per instance that was there: %v", ev)
	assert.Equal(t, inst, ev.Instance)

	inst.Port = port(4)
	require.NoError(t, reg.Update(ctx, inst))
	ev = nextEvent(t, sub)
	assert.Equal(t, discovery.Updated, ev.Type)
	assert.Equal(t, inst, ev.Instance)
	assert.Equal(t, 3, *ev.Old.Port)

	require.NoError(t, reg.Unregister(inst))
	ev = nextEvent(t, sub)
	assert.Equal(t, discovery.Removed, ev.Type)
	assert.Equal(t, inst, ev.Instance)
}

// A service cache's subscriber is told when the view may be stale (the
// link to the server is gone), and when it is current again, with what
// changed meanwhile before.
func TestCacheSubscriberIsToldWhenTheViewIsStaleAndCurrentAgainWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t) // a reconnect with watches set: go-zookeeper v1.0.4 races on lastZxid
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	reg := newDiscovery(t, newClient(t, cl.Addrs()), "/services")
	c, err := newDiscovery(t, newClient(t, p.Addrs()), "/services").NewCache("gap")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(ctxT(t, 30*time.Second)))
	sub := c.Subscribe()
	defer sub.Close()
	require.Equal(t, discovery.Snapshot, nextEvent(t, sub).Type)

	p.Blackhole()
	ev := nextEvent(t, sub)
	require.Equal(t, discovery.Stale, ev.Type, "%v", ev)
	assert.ErrorIs(t, ev.Err, zkrecipes.ErrStale)
	assert.ErrorIs(t, ev.Err, zkrecipes.ErrSuspended)
	assert.True(t, strings.HasPrefix(ev.Err.Error(), "service cache /services/gap: "), ev.Err.Error())

	inst := discovery.NewInstance("gap")
	require.NoError(t, reg.Register(ctxT(t, 30*time.Second), inst))
	p.Heal()
	var added bool
	for {
		ev := nextEvent(t, sub)
		if ev.Type == discovery.Added {
			assert.Equal(t, inst.ID, ev.Instance.ID)
			added = true
		}
		if ev.Type == discovery.Current {
			break
		}
	}
	assert.True(t, added, "what changed during the gap comes before Current")
}
