package mutex_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A one-off hold with each option, waited on (its watchers started),
// then released twice: nothing is left, neither node nor goroutine, and
// the second Release says released.
func TestOneShotWithOptionsReleasedTwiceLeavesNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	w := engine.NewWatcher(c)
	for name, opt := range map[string]mutex.Option{
		"lease":     mutex.WithLeaseTime(time.Minute),
		"revocable": mutex.WithRevocable(),
		"watcher":   mutex.WithWatcher(w),
	} {
		t.Run(name, func(t *testing.T) {
			path := "/oneshot/opts-" + name
			before := testkit.LeakBase()
			h, err := mutex.Acquire(ctxT(t, 10*time.Second), c, path, opt)
			require.NoError(t, err)
			_ = h.Done()
			require.NoError(t, h.Err())
			require.NoError(t, h.Release())
			assert.ErrorIs(t, h.Release(), zkrecipes.ErrReleased)
			assert.Empty(t, nodes(t, c, path), "the node was left behind")
			assert.NoError(t, goleak.Find(before...), "a released one-off hold left a goroutine")
		})
	}
}

// Listing a Mutex's holds (Holds, and the lock's own bookkeeping of
// whether a hold's lease ran out) is not waiting on their end: holds
// nobody waits on still cost no goroutine after it (hold package doc: a
// hold is followed from the first Done, Err or Context).
func TestListingHoldsDoesNotFollowThem(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	const n = 100
	g0, _ := footprint()
	var ms []*mutex.Mutex
	for i := range n {
		m := newMutex(t, c, fmt.Sprintf("/footprint/list-%d", i))
		_, err := m.Acquire(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		ms = append(ms, m)
	}
	for _, m := range ms {
		require.Len(t, m.Holds(), 1)
	}
	// Each request in flight has a goroutine: wait until they are done.
	var g1 int
	require.Eventually(t, func() bool {
		g1, _ = footprint()
		return g1-g0 <= 10
	}, 10*time.Second, 50*time.Millisecond, "goroutines for %d holds listed, nobody waiting on them", n)
}
