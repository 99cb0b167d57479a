package countdown_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Every goroutine a latch starts (the calls' watches included) ends with
// its owner's Close, or with the call.
func TestNoGoroutineOutlivesTheLatchAndItsClient(t *testing.T) {
	cl := zktest.Standalone(t)
	before := testkit.LeakBase()
	obs := newClient(t, cl.Addrs())
	setLatch(t, obs, "/latches/leak", 2)
	c := newClient(t, cl.Addrs())
	l := newLatch(t, c, "/latches/leak", 0)

	// A wait that ends with its context, one that ends with Close, and a
	// finished latch.
	ctx := ctxT(t, 300*time.Millisecond)
	assert.Error(t, l.Wait(ctx))
	got := waitAsync(ctxT(t, 30*time.Second), l)
	stillWaiting(t, got, absenceWindow)
	require.NoError(t, l.Close())
	assert.Error(t, receive(t, got, 10*time.Second))
	l2 := newLatch(t, c, "/latches/leak", 0)
	for range 2 {
		_, err := l2.CountDown(ctxT(t, 10*time.Second))
		require.NoError(t, err)
	}
	require.NoError(t, l2.Wait(ctxT(t, 10*time.Second)))
	require.NoError(t, l2.Close())
	require.NoError(t, c.Close())
	require.NoError(t, obs.Close())
	assert.NoError(t, goleak.Find(before...))
}
