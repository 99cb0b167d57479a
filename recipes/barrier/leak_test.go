package barrier_test

// Nothing is left behind: whatever ends an Enter or a Leave early (ctx,
// Close), the member's node is deleted, and no goroutine outlives the call
// that started it. Curator's timed enter leaves its node to be counted.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

func TestCancelledEnterDeletesItsNodeAndIsNotCounted(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	ac := newClient(t, cl.Addrs())
	a := newDouble(t, ac, "/b/cancel", 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := async(func() error { return a.Enter(ctx) })
	members(t, obs, "/b/cancel", 1)
	cancel()
	assert.ErrorIs(t, returned(t, got, 10*time.Second, "Enter"), context.Canceled)
	require.NoError(t, ac.Drain(ctxT(t, 10*time.Second)))
	members(t, obs, "/b/cancel", 0)
	assert.Empty(t, a.Node())

	// Had it been left, it would count and let the next member in alone.
	b := newDouble(t, newClient(t, cl.Addrs()), "/b/cancel", 2)
	bgot := async(func() error { return b.Enter(ctxT(t, 60*time.Second)) })
	members(t, obs, "/b/cancel", 1)
	blocked(t, bgot, "Enter with one live member")
}

func TestTimedOutLeaveDeletesItsNodeAndTheOthersGoOn(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	for _, lowest := range []bool{true, false} {
		path := map[bool]string{true: "/b/leave-timeout/lowest", false: "/b/leave-timeout/other"}[lowest]
		ds := enterAll(t, cl, path, 2)
		a, b := ds[0], ds[1]
		if (a.Node() < b.Node()) != lowest {
			a, b = b, a
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := a.Leave(ctx)
		cancel()
		// The lowest waits for the highest, the others for the lowest.
		assert.ErrorIs(t, err, context.DeadlineExceeded, "lowest=%v", lowest)
		members(t, obs, path, 1)
		require.NoError(t, b.Leave(ctxT(t, 30*time.Second)))
		waitNodes(t, obs, path, 0)
	}
}

func TestCloseEndsEnterAndLeaveAndDeletesTheNode(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())

	a := newDouble(t, newClient(t, cl.Addrs()), "/b/close/entering", 2)
	got := async(func() error { return a.Enter(ctxT(t, 60*time.Second)) })
	members(t, obs, "/b/close/entering", 1)
	require.NoError(t, a.Close())
	assert.ErrorIs(t, returned(t, got, 10*time.Second, "Enter"), zkrecipes.ErrClosed)
	members(t, obs, "/b/close/entering", 0)

	ds := enterAll(t, cl, "/b/close/entered", 2)
	require.NoError(t, ds[0].Close())
	assert.ErrorIs(t, ds[0].Leave(ctxT(t, time.Second)), zkrecipes.ErrClosed)
	require.NoError(t, ds[1].Leave(ctxT(t, 30*time.Second)), "a closed member has left")
	waitNodes(t, obs, "/b/close/entered", 0)

	w := newBarrier(t, newClient(t, cl.Addrs()), "/b/close/gate")
	require.NoError(t, w.Set(ctxT(t, 10*time.Second)))
	wait := async(func() error { return w.Wait(ctxT(t, 60*time.Second)) })
	blocked(t, wait, "Wait")
	require.NoError(t, w.Close())
	assert.ErrorIs(t, returned(t, wait, 10*time.Second, "Wait"), zkrecipes.ErrClosed)
}

func TestAbandonedCallsLeaveNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	c := newClient(t, cl.Addrs())
	gate := newBarrier(t, c, "/b/leak/gate")
	require.NoError(t, gate.Set(ctxT(t, 10*time.Second)))
	// A client that reconnects (a loaded machine can delay a ping reply)
	// starts new connection loops: they belong to live clients.
	before := testkit.LeakBase()

	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		if i%2 == 1 {
			ctx, cancel = context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
		}
		d, err := barrier.NewDouble(c, "/b/leak/double", 2)
		require.NoError(t, err)
		require.Error(t, d.Enter(ctx))
		require.Error(t, gate.Wait(ctx))
		cancel()
		require.NoError(t, d.Close())
	}
	require.NoError(t, c.Drain(ctxT(t, 10*time.Second)))
	members(t, obs, "/b/leak/double", 0)
	assert.NoError(t, goleak.Find(before...), "goroutines left by abandoned calls")
}

// Close racing an Enter that is about to succeed: whichever wins, the node
// does not outlive the closed member.
func TestCloseRacingASucceedingEnterLeavesNoNode(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	c := newClient(t, cl.Addrs())
	for range 40 {
		d, err := barrier.NewDouble(c, "/b/close-race", 1)
		require.NoError(t, err)
		got := async(func() error { return d.Enter(ctxT(t, 10*time.Second)) })
		// Let the create go out so Close lands in or after the Enter.
		require.Eventually(t, func() bool { return d.Node() != "" || len(got) > 0 }, 10*time.Second, time.Millisecond)
		require.NoError(t, d.Close())
		err = returned(t, got, 10*time.Second, "Enter")
		if err != nil {
			assert.ErrorIs(t, err, zkrecipes.ErrClosed)
		}
	}
	require.NoError(t, c.Drain(ctxT(t, 10*time.Second)))
	members(t, obs, "/b/close-race", 0)
}
