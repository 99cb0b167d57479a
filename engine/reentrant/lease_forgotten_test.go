package reentrant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A forgotten lease leaves nothing behind. The semaphore forgets leases
// that ran out (pruneLocked); a reentrant lock forgot an expired entry only
// when the same goroutine came back (live, from its own Acquire or Held).
// Goroutines end: a long-lived mutex with a lease time, taken by
// short-lived goroutines (one per request, say) that forget to release,
// kept one entry per forgotten hold (its Node, its Holds) in l.holds until
// Close, and HeldInProcess walked them all.
func TestForgottenLeasesOfEndedGoroutinesAreNotKept(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	l := New(c, Config{Recipe: "mutex", Kind: "mutex", Request: engine.Request{Dir: "/re/forgotten", Name: "lock-", Driver: engine.First(1)}, LeaseTime: 30 * time.Millisecond})
	t.Cleanup(func() { l.Close() })
	const n = 20
	holds := make([]*hold.Hold, n)
	for i := range n {
		done := make(chan error)
		go func() { // a goroutine that takes the lock, forgets it, and ends
			var err error
			holds[i], err = l.Acquire(testkit.Ctx(t, 10*time.Second), false)
			done <- err
		}()
		require.NoError(t, <-done)
	}
	for _, h := range holds {
		testkit.WaitClosed(t, h.Done(), 10*time.Second, "a lease never ran out")
	}
	assert.Empty(t, l.Holds())
	// The recipe forgets an entry right after its hold's signal fires.
	kept := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.holds)
	}
	require.Eventually(t, func() bool { return kept() == 0 }, 10*time.Second, time.Millisecond,
		"entries of ended goroutines whose leases ran out are kept until Close")
}
