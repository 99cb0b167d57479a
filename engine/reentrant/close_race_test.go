package reentrant

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Close races many acquires that are being granted (a queue that admits
// all of them at once), at several moments: whatever the interleaving,
// every acquire that returned a hold had it released by Close (none is
// still held once Close returns), every other one failed with
// zkrecipes.ErrClosed, and no node is left in the queue.
func TestCloseRacingGrantsLeavesNoNodeAndNoHold(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	const acquirers = 16
	// Close comes at a delay after the acquires start, or as soon as the
	// first of them returns its hold (-1): the others are being granted.
	delays := []time.Duration{0, 5 * time.Millisecond, 15 * time.Millisecond, 30 * time.Millisecond, 45 * time.Millisecond, 60 * time.Millisecond, 80 * time.Millisecond, -1, -1, -1}
	for round, delay := range delays {
		dir := fmt.Sprintf("/re/close-race/%d", round)
		l := New(c, Config{Recipe: "mutex", Kind: "mutex", Request: engine.Request{Dir: dir, Name: "lock-", Driver: engine.First(acquirers)}})
		ctx := testkit.Ctx(t, 20*time.Second)
		var wg sync.WaitGroup
		holds := make([]*hold.Hold, acquirers)
		errs := make([]error, acquirers)
		first := make(chan struct{}, acquirers)
		for i := range acquirers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				holds[i], errs[i] = l.Acquire(ctx, false)
				first <- struct{}{}
			}()
		}
		if delay < 0 {
			<-first
		} else {
			time.Sleep(delay)
		}
		require.NoError(t, l.Close())
		wg.Wait()
		granted := 0
		for i := range acquirers {
			if errs[i] != nil {
				assert.ErrorIs(t, errs[i], zkrecipes.ErrClosed, "round %d, acquirer %d", round, i)
				continue
			}
			granted++
			// Handed out before Close took the holds: Close released it.
			assert.ErrorIs(t, holds[i].Err(), zkrecipes.ErrReleased, "round %d, acquirer %d: a hold outlived Close", round, i)
		}
		require.NoError(t, c.Drain(ctx))
		kids, _, err := c.Children(ctx, dir)
		if !errors.Is(err, zk.ErrNoNode) {
			require.NoError(t, err)
		}
		assert.Empty(t, kids, "round %d (%d granted): nodes left after Close", round, granted)
		t.Logf("round %d: Close after %v, %d of %d granted", round, delay, granted, acquirers)
	}
}

// An acquire after Close is refused before anything is sent.
func TestAcquireAfterCloseIsRefused(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	l := New(c, Config{Recipe: "mutex", Kind: "mutex", Request: engine.Request{Dir: "/re/closed", Name: "lock-", Driver: engine.First(1)}})
	require.NoError(t, l.Close())
	_, err := l.Acquire(context.Background(), false)
	require.ErrorIs(t, err, zkrecipes.ErrClosed)
	ok, _, err := c.Exists(context.Background(), "/re/closed")
	require.NoError(t, err)
	assert.False(t, ok, "an acquire after Close sent something")
}
