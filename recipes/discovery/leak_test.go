package discovery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// Close of a Discovery, a Cache and a Provider ends all their goroutines,
// with the link up or down.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	before := testkit.LeakBase()
	for _, down := range []bool{false, true} {
		d, err := discovery.New(c, "/leak")
		require.NoError(t, err)
		require.NoError(t, d.Register(ctxT(t, 30*time.Second), discovery.NewInstance("s")))
		prov, err := d.NewProvider("s")
		require.NoError(t, err)
		require.NoError(t, prov.Start(ctxT(t, 30*time.Second)))
		if down {
			p.Blackhole()
		}
		require.NoError(t, prov.Close())
		require.NoError(t, d.Close())
		p.Heal()
		require.NoError(t, c.Drain(ctxT(t, 30*time.Second)))
		goleak.VerifyNone(t, before...)
	}
}

// A client closed before the Discovery on it is not held up by the
// registrations' background work, which runs on the client's workers, and
// the Discovery's Close after it still returns, ending its subscriptions.
func TestClientClosedFirstDoesNotWaitForTheDiscovery(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	d, err := discovery.New(c, "/first")
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, d.Register(ctxT(t, 30*time.Second), discovery.NewInstance("s")))
	}
	sub := d.Subscribe()
	defer sub.Close()
	closed := make(chan struct{})
	go func() { defer close(closed); _ = c.Close() }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the client's Close waits for the Discovery")
	}
	require.NoError(t, d.Close())
	for range sub.Changes() { // drained: it is closed once the feed ends
	}
}
