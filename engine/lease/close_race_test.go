package lease

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Close races many acquires that are being granted (room for all of them:
// they pass the internal mutex one after the other), at several moments:
// whatever the interleaving, every acquire that returned leases had them
// released by Close (none is still held once Close returns), every other
// one failed with zkrecipes.ErrClosed, and no node is left, lease or
// internal lock.
func TestCloseRacingGrantsLeavesNoNodeAndNoLease(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	const acquirers = 16
	// Close comes at a delay after the acquires start, or as soon as the
	// first of them returns its leases (-1): the others are being granted.
	delays := []time.Duration{0, 5 * time.Millisecond, 15 * time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond, 100 * time.Millisecond, -1, -1, -1}
	for round, delay := range delays {
		path := fmt.Sprintf("/sem/close-race/%d", round)
		s := New(c, Config{Recipe: "semaphore", Kind: "semaphore", Path: path, Max: acquirers, ID: []byte("test")})
		ctx := testkit.Ctx(t, 20*time.Second)
		var wg sync.WaitGroup
		leases := make([][]*hold.Hold, acquirers)
		errs := make([]error, acquirers)
		first := make(chan struct{}, acquirers)
		for i := range acquirers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				leases[i], errs[i] = s.Acquire(ctx, 1)
				first <- struct{}{}
			}()
		}
		if delay < 0 {
			<-first
		} else {
			time.Sleep(delay)
		}
		require.NoError(t, s.Close())
		wg.Wait()
		granted := 0
		for i := range acquirers {
			if errs[i] != nil {
				assert.ErrorIs(t, errs[i], zkrecipes.ErrClosed, "round %d, acquirer %d", round, i)
				continue
			}
			granted++
			for _, l := range leases[i] {
				// Handed out before Close took the leases: Close released it.
				assert.ErrorIs(t, l.Err(), zkrecipes.ErrReleased, "round %d, acquirer %d: a lease outlived Close", round, i)
			}
		}
		require.NoError(t, c.Drain(ctx))
		for _, dir := range []string{framework.Join(path, leasesDir), framework.Join(path, locksDir)} {
			kids, _, err := c.Children(ctx, dir)
			if !errors.Is(err, zk.ErrNoNode) {
				require.NoError(t, err)
			}
			assert.Empty(t, kids, "round %d (%d granted): nodes left in %s after Close", round, granted, dir)
		}
		t.Logf("round %d: Close after %v, %d of %d granted", round, delay, granted, acquirers)
	}
}
