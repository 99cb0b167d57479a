package shared_test

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
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// Close ends the follower and every subscription, whether the node exists,
// was deleted, or the link is down; a subscription whose reader went away
// ends with its own Close.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	before := testkit.LeakBase()

	for _, state := range []string{"following", "deleted", "link down"} {
		t.Run(state, func(t *testing.T) {
			n, err := shared.NewCount(c, "/leak/count", 1)
			require.NoError(t, err)
			require.NoError(t, n.Start(ctxT(t, 30*time.Second)))
			drained := n.Subscribe()
			abandoned := n.Subscribe()
			switch state {
			case "deleted":
				require.NoError(t, c.Delete(ctxT(t, 10*time.Second), "/leak/count", -1))
				require.EventuallyWithT(t, func(ct *assert.CollectT) {
					assert.ErrorIs(ct, n.Err(), zkrecipes.ErrNodeDeleted)
				}, 10*time.Second, 10*time.Millisecond)
			case "link down":
				p.Blackhole()
				require.EventuallyWithT(t, func(ct *assert.CollectT) {
					assert.ErrorIs(ct, n.Err(), zkrecipes.ErrSuspended)
				}, 30*time.Second, 10*time.Millisecond)
			}
			require.NoError(t, n.Close())
			for range drained.Changes() { // delivers what was queued, then ends
			}
			abandoned.Close()
			p.Heal()
		})
	}
	assert.NoError(t, goleak.Find(before...))
}

// A Start that cannot finish (the link is down) ends with its context and
// leaves nothing running; Start can then be called again.
func TestStartThatTimesOutLeavesNoGoroutineAndCanBeRetried(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	before := testkit.LeakBase()
	n, err := shared.NewCount(c, "/leak/start", 1)
	require.NoError(t, err)

	p.Blackhole()
	err = n.Start(ctxT(t, 500*time.Millisecond))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, n.Err(), zkrecipes.ErrNotStarted)
	p.Heal()
	require.NoError(t, n.Start(ctxT(t, 30*time.Second)))
	got, err := n.Get()
	require.NoError(t, err)
	assert.Equal(t, int32(1), got.Value)
	require.NoError(t, n.Close())
	assert.NoError(t, goleak.Find(before...))
}

// Close while Start waits for the link ends both at once.
func TestCloseDuringStartEndsIt(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	n := newCount(t, c, "/leak/during", 1) // the node exists: Start only waits for its read
	require.NoError(t, n.Close())

	m, err := shared.NewCount(c, "/leak/during", 1)
	require.NoError(t, err)
	p.Blackhole()
	defer p.Heal()
	done := make(chan error, 1)
	go func() { done <- m.Start(context.Background()) }()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.ErrorIs(ct, m.Err(), zkrecipes.ErrNotStarted)
	}, time.Second, 10*time.Millisecond)
	require.NoError(t, m.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	case <-time.After(30 * time.Second):
		t.Fatal("Start did not end with Close")
	}
}
