package discovery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// waitListed waits until a query of name finds exactly ids.
func waitListed(t *testing.T, d *discovery.Discovery, name string, ids ...string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got, err := d.QueryForInstances(ctxT(t, 10*time.Second), name)
		assert.NoError(ct, err)
		var have []string
		for _, inst := range got {
			have = append(have, inst.ID)
		}
		assert.ElementsMatch(ct, ids, have)
	}, 60*time.Second, 20*time.Millisecond)
}

// An instance whose registering client is cut off every way in turn, for
// less than its session timeout, stays listed throughout, and an Update
// made during the fault is what the others read once the link is back.
func TestRegistrationOutlastsLinkFaultsWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t)
	cl := zktest.Standalone(t)
	reader := newDiscovery(t, newClient(t, cl.Addrs()), "/services")
	for name, fault := range map[string]func(p *zktest.Proxy){
		"cut":              func(p *zktest.Proxy) { p.Cut() },
		"blackhole":        func(p *zktest.Proxy) { p.Blackhole() },
		"replies-dropped":  func(p *zktest.Proxy) { p.DropReplies() },
		"requests-dropped": func(p *zktest.Proxy) { p.DropRequests() },
	} {
		t.Run(name, func(t *testing.T) {
			svc := "fault-" + name
			p := cl.NewProxy()
			reg := newDiscovery(t, newClient(t, p.Addrs()), "/services")
			inst := discovery.NewInstance(svc)
			inst.ID = "a"
			inst.Address = "10.0.0.1"
			require.NoError(t, reg.Register(ctxT(t, 30*time.Second), inst))
			waitListed(t, reader, svc, "a")
			fault(p)
			waitListed(t, reader, svc, "a") // its session lives
			p.Heal()
			inst.Address = "10.0.0.2"
			require.NoError(t, reg.Update(ctxT(t, 30*time.Second), inst))
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				got, ok, err := reader.QueryForInstance(ctxT(t, 10*time.Second), svc, "a")
				if assert.NoError(ct, err) && assert.True(ct, ok) {
					assert.Equal(ct, "10.0.0.2", got.Address)
				}
			}, 60*time.Second, 20*time.Millisecond)
		})
	}
}

// Across a server restart a registration is listed again, and one made
// after it is found.
func TestRegistrationOutlastsAServerRestartWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t)
	cl := zktest.Standalone(t)
	reg := newDiscovery(t, newClient(t, cl.Addrs()), "/services")
	reader := newDiscovery(t, newClient(t, cl.Addrs()), "/services")
	register := func(id string) {
		inst := discovery.NewInstance("restart")
		inst.ID = id
		require.NoError(t, reg.Register(ctxT(t, 30*time.Second), inst))
	}
	register("a")
	waitListed(t, reader, "restart", "a")
	cl.Server(1).Restart()
	register("b")
	waitListed(t, reader, "restart", "a", "b")
}
