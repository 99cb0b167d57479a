package mutex_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A recipe Close and a client Close racing the lease's end, on either side
// of it: no panic, no race, the node goes, the hold ends, and no goroutine
// is left behind.
func TestRecipeAndClientCloseRacingTheLeaseEndLeaveNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	before := append([]goleak.Option{goleak.IgnoreCurrent()}, testkit.ClientLoops()...)
	for i := range 40 {
		c, err := framework.Dial(ctxT(t, 10*time.Second), cl.Addrs())
		require.NoError(t, err)
		m, err := mutex.New(c, "/locks/lease-close-race", mutex.WithLeaseTime(30*time.Millisecond))
		require.NoError(t, err)
		h, err := m.Acquire(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		end, _ := h.Expiry()
		margin := time.Duration(i%8-4) * 50 * time.Microsecond
		time.Sleep(time.Until(end.Add(margin)))
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _ = m.Close() }()
		go func() { defer wg.Done(); _ = c.Close() }()
		wg.Wait()
		err = m.Release()
		assert.True(t, err == nil || errors.Is(err, zkrecipes.ErrReleased) || errors.Is(err, zkrecipes.ErrNotHeld) || errors.Is(err, zkrecipes.ErrHoldLost), "%v", err)
		assert.Error(t, h.Err())
		waitNodes(t, obs, "/locks/lease-close-race", 0)
	}
	var leaked error
	assert.Eventually(t, func() bool { leaked = goleak.Find(before...); return leaked == nil }, 5*time.Second, 50*time.Millisecond)
	assert.NoError(t, leaked)
}
