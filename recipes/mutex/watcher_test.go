package mutex_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// Mutexes sharing one engine.Watcher keep every guarantee of a hold: a
// hold whose node someone else deletes is told (and only that one), the
// lock then goes to the next contender, and releases leave nothing
// behind.
func TestMutexesSharingAWatcherStillLearnTheirLoss(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	other := newClient(t, cl.Addrs())
	w := engine.NewWatcher(c)
	holds := make([]*hold.Hold, 5)
	for i := range holds {
		m, err := mutex.New(c, fmt.Sprintf("/watched/m%d", i), mutex.WithWatcher(w))
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		holds[i], err = m.Acquire(ctxT(t, 30*time.Second))
		require.NoError(t, err)
	}
	contender, err := mutex.New(other, "/watched/m2")
	require.NoError(t, err)
	t.Cleanup(func() { _ = contender.Close() })
	got := make(chan error, 1)
	var next *hold.Hold
	go func() {
		h, err := contender.Acquire(ctxT(t, 30*time.Second))
		next = h
		got <- err
	}()
	testkit.WaitChildren(t, other, "/watched/m2", 2)

	require.NoError(t, other.Delete(ctxT(t, 10*time.Second), holds[2].Path(), -1))
	testkit.WaitClosed(t, holds[2].Done(), 10*time.Second, "the hold whose node was deleted")
	assert.ErrorIs(t, holds[2].Err(), zkrecipes.ErrNodeDeleted)
	require.NoError(t, <-got)
	assert.Greater(t, next.Token(), holds[2].Token())
	for i, h := range holds {
		if i != 2 {
			assert.NoError(t, h.Err(), "hold %d", i)
		}
	}
	assert.ErrorIs(t, holds[2].Release(), zkrecipes.ErrHoldLost)
	require.NoError(t, hold.ReleaseAll(append(holds[:2:2], append(holds[3:], next)...)...))
	for i := range holds {
		testkit.WaitChildren(t, other, fmt.Sprintf("/watched/m%d", i), 0)
	}
}
