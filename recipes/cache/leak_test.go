package cache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// Close ends every goroutine of the cache (its engine, its session
// follower, one per watch) and every subscription, whether the tree is
// there, gone, or the link is down.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	direct := newClient(t, cl.Addrs())
	before := testkit.LeakBase()

	for i, state := range []string{"following", "deleted", "link down"} {
		t.Run(state, func(t *testing.T) {
			path := fmt.Sprintf("/leak/%d", i)
			for _, n := range []string{"/a/x", "/b"} {
				create(t, direct, path+n, "")
			}
			ch, err := cache.New(c, path, cache.Tree(cache.AnyDepth))
			require.NoError(t, err)
			require.NoError(t, ch.Start(ctxT(t, 30*time.Second)))
			drained := ch.Subscribe()
			abandoned := ch.Subscribe()
			switch state {
			case "deleted":
				del(t, direct, path)
				require.EventuallyWithT(t, func(ct *assert.CollectT) {
					nodes, err := ch.Nodes()
					assert.NoError(ct, err)
					assert.Empty(ct, nodes)
				}, 10*time.Second, 10*time.Millisecond)
			case "link down":
				p.Blackhole()
				require.EventuallyWithT(t, func(ct *assert.CollectT) {
					assert.ErrorIs(ct, ch.Err(), zkrecipes.ErrSuspended)
				}, 30*time.Second, 10*time.Millisecond)
			}
			require.NoError(t, ch.Close())
			for range drained.Changes() {
			}
			abandoned.Close()
			goleak.VerifyNone(t, before...)
			p.Heal()
		})
	}
}

// A Start that gives up leaves nothing running.
func TestStartThatGivesUpLeavesNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	before := testkit.LeakBase()
	p.Blackhole()
	defer p.Heal()
	ch, err := cache.New(c, "/leak/start", cache.Children())
	require.NoError(t, err)
	defer ch.Close()
	err = ch.Start(ctxT(t, 500*time.Millisecond))
	require.Error(t, err)
	// The client's own request in flight ends with the link's end; the
	// cache's goroutines have ended already.
	p.Heal()
	_, err = c.WaitConnected(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	goleak.VerifyNone(t, before...)
	require.NoError(t, ch.Start(ctxT(t, 30*time.Second)), "Start may be called again")
}

// Close ends a Start that waits (its link is down) at once: Start returns
// zkrecipes.ErrClosed.
func TestCloseEndsAStartInProgress(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	p.Blackhole()
	defer p.Heal()
	ch, err := cache.New(c, "/leak/closing", cache.Single())
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- ch.Start(ctxT(t, time.Minute)) }()
	require.Never(t, func() bool { return len(started) > 0 }, 200*time.Millisecond, 10*time.Millisecond, "Start returned with the link down")
	closed := make(chan struct{})
	go func() { _ = ch.Close(); close(closed) }()
	testkit.WaitClosed(t, closed, 5*time.Second, "Close waited for the Start in progress")
	select {
	case err := <-started:
		assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return after Close")
	}
}
