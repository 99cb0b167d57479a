package shared_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A subscriber that never reads while the server applies more changes
// than its bound holds is told it fell behind (its channel closes, Err
// wraps ErrFellBehind) instead of growing without bound, while a reader of
// the same Count that keeps up gets every value it was given, in order,
// and is not ended. Subscribing again starts with the value held.
func TestASubscriberThatNeverReadsIsToldItFellBehind(t *testing.T) {
	cl := zktest.Standalone(t)
	follower := newCount(t, newClient(t, cl.Addrs()), "/shared/behind", 0)
	writer := newCount(t, newClient(t, cl.Addrs()), "/shared/behind", 0)
	stalled := follower.Subscribe()
	defer stalled.Close()
	reader := follower.Subscribe()
	defer reader.Close()

	ctx, cancel := context.WithCancel(ctxT(t, 2*time.Minute))
	defer cancel()
	seen, done := 0, make(chan struct{})
	var latest atomic.Int32
	go func() { // keeps up with the follower's values until told to stop
		defer close(done)
		prev := <-reader.Changes()
		for {
			select {
			case got, ok := <-reader.Changes():
				if !ok {
					return
				}
				assert.Greater(t, got.Value, prev.Value, "in order")
				prev = got
				seen++
				latest.Store(got.Value)
			case <-ctx.Done():
				return
			}
		}
	}()
	var last int32
	for stalled.Err() == nil { // the follower's values pile up unread
		require.NoError(t, ctx.Err(), "not told after %d writes", last)
		last++
		_, err := writer.Set(ctx, last)
		require.NoError(t, err)
	}
	require.ErrorIs(t, stalled.Err(), zkrecipes.ErrFellBehind)
	n := 0
	for range stalled.Changes() {
		n++
	}
	assert.LessOrEqual(t, n, 1, "nothing after the value being handed over")
	waitCount(t, follower, last)
	require.Eventually(t, func() bool { return latest.Load() == last }, 30*time.Second, 10*time.Millisecond,
		"the reader that keeps up reaches the last value")
	cancel()
	<-done
	assert.NoError(t, reader.Err(), "the reader that kept up is not ended")
	assert.Greater(t, seen, framework.DefaultBound, "the follower published more than the bound")

	again := follower.Subscribe()
	defer again.Close()
	assert.Equal(t, last, (<-again.Changes()).Value, "the value held, first")
}
