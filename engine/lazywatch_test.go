package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// The first look at a hold's end (Done, Err, Context) starts its node's
// watchers; Release, Forget and the client's Close stop them. Run under
// -race: a watcher started as the node is stopped must be waited for or
// never start (goleak at the end), with no race on the watchers' state.
func TestFirstLookRacingReleaseForgetAndCloseLeavesNoWatcher(t *testing.T) {
	cl := zktest.Standalone(t)
	other := dial(t, cl.Addrs())
	for i := range 60 {
		c := dial(t, cl.Addrs())
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		g, err := engine.Enter(ctx, engine.Request{Client: c, Dir: "/lazy/race", Name: "lock-", Driver: engine.First(1)})
		cancel()
		require.NoError(t, err)
		n := engine.Follow(c, *g)
		h, err := n.NewHold(func(*hold.Hold) error { return n.Release() })
		require.NoError(t, err)
		if i%2 == 0 {
			// Another contender comes and goes: the directory's change
			// (Grant.Changed) has the node's own watch start too.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			_, err := engine.Enter(ctx, engine.Request{Client: other, Dir: "/lazy/race", Name: "lock-", Driver: engine.First(1), NoWait: true})
			cancel()
			require.ErrorIs(t, err, zkrecipes.ErrWouldBlock)
		}
		var wg sync.WaitGroup
		look := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
		look(func() { <-h.Done() })
		look(func() { _ = h.Err() })
		look(func() { <-h.Context(context.Background()).Done() })
		look(func() { <-n.Done() })
		switch i % 3 { // with i%2: every pairing
		case 0:
			look(func() { _ = h.Release() })
		case 1:
			look(func() { n.Forget(zkrecipes.ErrClosed); _ = engine.Leave(c, g.Path, g.Session.ID) })
			look(func() { _ = h.Release() })
		case 2:
			look(func() { _ = c.Close() })
		}
		wg.Wait()
		require.NoError(t, c.Close())
	}
}

// Forget with no reason is a forget like any other: the node ends (as
// released), and a hold of it released afterwards does not panic. Before,
// a nil reason left the node ended with no error, and the next end closed
// its channel a second time.
func TestForgetWithNoReasonEndsTheNodeAsReleased(t *testing.T) {
	cl := zktest.Standalone(t)
	c := dial(t, cl.Addrs())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	g, err := engine.Enter(ctx, engine.Request{Client: c, Dir: "/lazy/forget", Name: "lock-", Driver: engine.First(1)})
	require.NoError(t, err)
	n := engine.Follow(c, *g)
	h, err := n.NewHold(func(*hold.Hold) error { return n.Release() })
	require.NoError(t, err)
	n.Forget(nil)
	require.ErrorIs(t, n.Err(), zkrecipes.ErrReleased)
	require.NotPanics(t, func() { _ = h.Release() })
	require.NoError(t, engine.Leave(c, g.Path, g.Session.ID))
}
