package discovery_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

func TestRegisteredInstanceIsFoundUpdatedAndUnregistered(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	d := newDiscovery(t, c, "/services")
	other := newDiscovery(t, newClient(t, cl.Addrs()), "/services")
	inst := discovery.NewInstance("billing")
	inst.Address, inst.Port = "10.1.2.3", port(8080)
	inst.Payload = json.RawMessage(`"v1"`)
	ctx := ctxT(t, 30*time.Second)
	require.NoError(t, d.Register(ctx, inst))

	names, err := other.QueryForNames(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"billing"}, names)
	got, err := other.QueryForInstances(ctx, "billing")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, inst, got[0])
	_, st := getNode(t, c, "/services/billing/"+inst.ID)
	assert.Equal(t, c.Session().ID, st.EphemeralOwner)

	inst.Payload = json.RawMessage(`"v2"`)
	require.NoError(t, d.Update(ctx, inst))
	one, ok, err := other.QueryForInstance(ctx, "billing", inst.ID)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, `"v2"`, string(one.Payload))

	require.NoError(t, d.Unregister(inst))
	require.NoError(t, c.Drain(ctx))
	_, ok, err = other.QueryForInstance(ctx, "billing", inst.ID)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.ErrorIs(t, d.Update(ctx, inst), discovery.ErrNotRegistered)
}

func getNode(t *testing.T, c *framework.Client, path string) ([]byte, *zk.Stat) {
	t.Helper()
	data, st, err := c.Get(ctxT(t, 10*time.Second), path)
	require.NoError(t, err)
	return data, st
}

// Curator re-registers after a reconnection; here the registration is a
// persistent node, made again as soon as the new session is up, with the
// last update.
func TestInstanceIsRegisteredAgainAfterSessionExpiry(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	d := newDiscovery(t, c, "/services")
	observer := newDiscovery(t, newClient(t, cl.Addrs()), "/services")
	inst := discovery.NewInstance("search")
	require.NoError(t, d.Register(ctxT(t, 30*time.Second), inst))
	inst.Payload = json.RawMessage(`{"@class":"java.util.HashMap","shard":"2"}`)
	require.NoError(t, d.Update(ctxT(t, 30*time.Second), inst))

	testkit.LoseSession(t, p, c)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got, ok, err := observer.QueryForInstance(ctxT(t, 10*time.Second), "search", inst.ID)
		if assert.NoError(ct, err) && assert.True(ct, ok) {
			assert.Equal(ct, inst, got)
		}
		st, ok := d.Registration(inst.ID)
		assert.True(ct, ok)
		assert.True(ct, st.InPlace)
		assert.Equal(ct, c.Session().ID, st.Owner)
	}, 60*time.Second, 20*time.Millisecond)
}

// A node left at the instance's path by another session (this instance's
// previous process, whose session has not expired yet) is replaced, as
// Curator's registerService does. The previous process is dead: its node
// is a bare ephemeral that nothing makes again.
func TestRegisterReplacesAnotherSessionsNode(t *testing.T) {
	cl := zktest.Standalone(t)
	old := newClient(t, cl.Addrs())
	c := newClient(t, cl.Addrs())
	inst := discovery.NewInstance("api")
	prev, err := json.Marshal(inst)
	require.NoError(t, err)
	_, err = old.Create(ctxT(t, 10*time.Second), "/services/api/"+inst.ID, prev,
		framework.WithMode(framework.Ephemeral), framework.WithParents())
	require.NoError(t, err)
	inst.Port = port(9000)
	require.NoError(t, newDiscovery(t, c, "/services").Register(ctxT(t, 30*time.Second), inst))
	data, st := getNode(t, c, "/services/api/"+inst.ID)
	assert.Equal(t, c.Session().ID, st.EphemeralOwner)
	assert.Contains(t, string(data), `"port":9000`)
}

func TestProviderPicksInTurnAndLeavesOutDownAndDisabledInstances(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	d := newDiscovery(t, c, "/services")
	ctx := ctxT(t, 30*time.Second)
	var insts []discovery.Instance
	for _, id := range []string{"a", "b", "c"} {
		inst := discovery.NewInstance("web")
		inst.ID = id
		require.NoError(t, d.Register(ctx, inst))
		insts = append(insts, inst)
	}
	p, err := d.NewProvider("web", discovery.WithDownInstancePolicy(time.Hour, 2))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	require.NoError(t, p.Start(ctx))
	var picked []string
	for range 6 {
		inst, err := p.Instance()
		require.NoError(t, err)
		picked = append(picked, inst.ID)
	}
	assert.Equal(t, []string{"a", "b", "c", "a", "b", "c"}, picked)

	p.NoteError(insts[1])
	p.NoteError(insts[1]) // the threshold: b is down
	insts[2].Disabled = true
	require.NoError(t, d.Update(ctx, insts[2]))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		all, err := p.Instances()
		assert.NoError(ct, err)
		for _, inst := range all {
			if inst.ID == "c" {
				assert.True(ct, inst.Disabled)
			}
		}
	}, 10*time.Second, 10*time.Millisecond)
	for range 4 {
		inst, err := p.Instance()
		require.NoError(t, err)
		assert.Equal(t, "a", inst.ID)
	}
	require.NoError(t, d.Unregister(insts[0]))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := p.Instance()
		assert.ErrorIs(ct, err, discovery.ErrNoInstance)
	}, 10*time.Second, 10*time.Millisecond)
}

func TestStickyKeepsItsInstanceUntilItGoes(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	d := newDiscovery(t, c, "/services")
	ctx := ctxT(t, 30*time.Second)
	a, b := discovery.NewInstance("db"), discovery.NewInstance("db")
	require.NoError(t, d.Register(ctx, a))
	require.NoError(t, d.Register(ctx, b))
	p, err := d.NewProvider("db", discovery.WithStrategy(discovery.Sticky(discovery.Random())))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	require.NoError(t, p.Start(ctx))
	first, err := p.Instance()
	require.NoError(t, err)
	for range 10 {
		again, err := p.Instance()
		require.NoError(t, err)
		assert.Equal(t, first.ID, again.ID)
	}
	gone, other := a, b
	if first.ID == b.ID {
		gone, other = b, a
	}
	require.NoError(t, d.Unregister(gone))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		inst, err := p.Instance()
		assert.NoError(ct, err)
		assert.Equal(ct, other.ID, inst.ID)
	}, 10*time.Second, 10*time.Millisecond)
}

// The cache follows the instances through a cut and an expiry of its own
// session, says when its view may be stale, and catches up.
func TestCacheCatchesUpAfterFaults(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	watcher := newClient(t, p.Addrs())
	reg := newDiscovery(t, newClient(t, cl.Addrs()), "/services")
	cache, err := newDiscovery(t, watcher, "/services").NewCache("q")
	require.NoError(t, err)
	t.Cleanup(func() { _ = cache.Close() })
	require.NoError(t, cache.Start(ctxT(t, 30*time.Second)))
	sub := cache.Subscribe()
	defer sub.Close()
	waitIDs := func(ids ...string) {
		t.Helper()
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			got, err := cache.Instances()
			assert.NoError(ct, err)
			var have []string
			for _, inst := range got {
				have = append(have, inst.ID)
			}
			assert.ElementsMatch(ct, ids, have)
		}, 60*time.Second, 10*time.Millisecond)
	}
	register := func(id string) {
		inst := discovery.NewInstance("q")
		inst.ID = id
		require.NoError(t, reg.Register(ctxT(t, 30*time.Second), inst))
	}
	register("one")
	waitIDs("one")
	<-sub.Changes()

	p.Blackhole()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := cache.Instances()
		assert.ErrorIs(ct, err, zkrecipes.ErrStale)
		assert.ErrorIs(ct, err, zkrecipes.ErrSuspended)
		if err != nil {
			assert.True(ct, strings.HasPrefix(err.Error(), "service cache /services/q: may be stale: "), err.Error())
		}
	}, 30*time.Second, 10*time.Millisecond)
	register("two")
	p.Heal()
	waitIDs("one", "two")

	zktest.ExpireSession(t, p, watcher.Session().ID)
	register("three")
	waitIDs("one", "two", "three")
}
