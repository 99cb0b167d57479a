package reentrant

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/testkit"
)

// Review3 (lease-time holds, "a forgotten lease leaves nothing behind"):
// the semaphore forgets leases that ran out (pruneLocked), but a reentrant
// lock forgets an expired entry only when the same goroutine comes back
// (live, from its own Acquire or Held). Goroutines end: a long-lived mutex
// with a lease time, taken by short-lived goroutines (one per request, say)
// that forget to release, keeps one entry per forgotten hold (its Node,
// its Holds) in l.holds until Close, and HeldInProcess walks them all.
func TestReview3ForgottenLeasesOfEndedGoroutinesAreNotKept(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	l := New(c, "mutex", metrics.Mutex, contend.Request{Dir: "/re/forgotten", Name: "lock-", Driver: contend.First(1)}, false, 30*time.Millisecond)
	t.Cleanup(func() { l.Close() })
	const n = 20
	for range n {
		done := make(chan error)
		go func() { // a goroutine that takes the lock, forgets it, and ends
			_, err := l.Acquire(testkit.Ctx(t, 10*time.Second), false)
			done <- err
		}()
		require.NoError(t, <-done)
	}
	// Every lease has run out by now.
	time.Sleep(200 * time.Millisecond)
	assert.False(t, (len(l.Holds()) > 0))
	l.mu.Lock()
	kept := len(l.holds)
	expired := 0
	for _, e := range l.holds {
		if errors.Is(e.node.Err(), zkrecipes.ErrLeaseExpired) {
			expired++
		}
	}
	l.mu.Unlock()
	assert.Zero(t, kept, "entries of ended goroutines whose leases ran out (%d of them expired) are kept until Close", expired)
}
