package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// The lease exists for holders that never release. Once a forgotten lease
// has run out (signal fired, node deleted by the lease), nothing of it
// stays behind in the process. Before, each forgotten lease kept its
// node's watchSignal goroutine (and its client OnClose hook, and its entry
// in the Semaphore's held set) until the Semaphore or the client was
// closed (expire never cancelled n.life nor unhooked), so a long-lived
// Semaphore whose holders kept forgetting grew by a goroutine per
// forgotten lease, without bound.
func TestForgottenLeasesThatRanOutLeaveNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	s := newSem(t, c, "/sem/lease-forgotten", 1, semaphore.WithLeaseTime(200*time.Millisecond))
	// One full cycle first: whatever the Semaphore starts once is not counted.
	l, err := s.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	require.NoError(t, l[0].Release())
	before := append([]goleak.Option{goleak.IgnoreCurrent()}, testkit.ClientLoops()...)

	const forgotten = 5
	for range forgotten {
		ls, err := s.Acquire(ctxT(t, 10*time.Second), 1) // waits for the previous lease's end
		require.NoError(t, err)
		testkit.WaitClosed(t, ls[0].Done(), 5*time.Second, "the lease's end")
		require.ErrorIs(t, ls[0].Err(), zkrecipes.ErrLeaseExpired)
		// ... and never released: that is what the lease is for.
	}
	waitNodes(t, c, "/sem/lease-forgotten/leases", 0)
	var leaked error
	assert.Eventually(t, func() bool { leaked = goleak.Find(before...); return leaked == nil }, 5*time.Second, 50*time.Millisecond)
	assert.NoError(t, leaked, "goroutines left by %d forgotten leases that ran out", forgotten)
}
