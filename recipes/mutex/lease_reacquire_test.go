package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A goroutine that forgot to release is the case a lease exists for. Once
// its lease has run out (signal fired, node deleted, others granted), the
// forgetful goroutine may acquire again, as Redisson's lock(leaseTime) lets
// the same thread lock again after the lease ran out. Before, it was locked
// out: its entry stayed in the reentrant Lock, so every later Acquire on it
// was a "reentrant acquire of a lost hold" and failed at once with
// zkrecipes.ErrHoldLost (and HeldInProcess stayed true) until it called
// Release - which is exactly what it forgot.
func TestGoroutineWhoseForgottenLeaseRanOutCanAcquireAgain(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	leased := newMutex(t, c, "/locks/lease-again", mutex.WithLeaseTime(300*time.Millisecond))

	h, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	testkit.WaitClosed(t, h.Done(), 5*time.Second, "the lease's end")
	require.ErrorIs(t, h.Err(), zkrecipes.ErrLeaseExpired)
	waitNodes(t, c, "/locks/lease-again", 0)
	// Forgotten: no Release. The lock is free in ZooKeeper.
	assert.False(t, (len(leased.Holds()) > 0), "a hold whose lease ran out and whose node is gone still counts as held in this process")

	h2, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err, "the same goroutine cannot take the free lock again after its forgotten lease ran out")
	assert.NoError(t, h2.Err())
	assert.Greater(t, h2.Token(), h.Token())
}
