package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// waitMax waits until s has seen the shared count become want.
func waitMax(t testing.TB, s *semaphore.Semaphore, want int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := s.MaxLeases(ctx)
		return err == nil && n == want
	}, 10*time.Second, 10*time.Millisecond, "shared count never became %d", want)
}

func TestSharedCountIsCuratorFormat(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	require.NoError(t, setCount(ctxT(t, 10*time.Second), c, "/counts/format", 258))
	data, _, err := c.Get(ctxT(t, 10*time.Second), "/counts/format")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 1, 2}, data, "4-byte big-endian int, as Curator's SharedCount")
	require.NoError(t, setCount(ctxT(t, 10*time.Second), c, "/counts/format", -1))
	data, _, err = c.Get(ctxT(t, 10*time.Second), "/counts/format")
	require.NoError(t, err)
	assert.Equal(t, []byte{0xff, 0xff, 0xff, 0xff}, data)
}

func TestRaisingSharedCountLetsBlockedAcquirerIn(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	require.NoError(t, setCount(ctxT(t, 10*time.Second), obs, "/counts/raise", 1))
	holder := newShared(t, newClient(t, cl.Addrs()), "/sem/raise", "/counts/raise")
	waiter := newShared(t, newClient(t, cl.Addrs()), "/sem/raise", "/counts/raise")
	n, err := holder.MaxLeases(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	h, err := holder.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	got := acquireAsync(ctxT(t, 30*time.Second), waiter, 1)
	waitNodes(t, obs, "/sem/raise/leases", 2)
	notGranted(t, got)

	require.NoError(t, setCount(ctxT(t, 10*time.Second), obs, "/counts/raise", 2))
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	assert.Nil(t, h[0].Err(), "the first lease is untouched")
	closeAll(t, append(h, a.leases...))
}

func TestLoweringSharedCountMakesNewAcquirersWait(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	require.NoError(t, setCount(ctxT(t, 10*time.Second), obs, "/counts/lower", 2))
	holder := newShared(t, newClient(t, cl.Addrs()), "/sem/lower", "/counts/lower")
	waiter := newShared(t, newClient(t, cl.Addrs()), "/sem/lower", "/counts/lower")
	held, err := holder.Acquire(ctxT(t, 10*time.Second), 2)
	require.NoError(t, err)

	require.NoError(t, setCount(ctxT(t, 10*time.Second), obs, "/counts/lower", 1))
	waitMax(t, waiter, 1)
	waitMax(t, holder, 1)
	assert.Nil(t, held[0].Err(), "leases already held are not taken back")
	assert.Nil(t, held[1].Err())

	got := acquireAsync(ctxT(t, 30*time.Second), waiter, 1)
	waitNodes(t, obs, "/sem/lower/leases", 3)
	require.NoError(t, held[0].Release())
	// One lease held and the waiter's: two, above the new maximum of one.
	notGranted(t, got)
	require.NoError(t, held[1].Release())
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	closeAll(t, a.leases)
}

func TestMissingSharedCountMakesAcquirersWaitUntilSet(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	s := newShared(t, newClient(t, cl.Addrs()), "/sem/missing", "/counts/missing")
	_, err := s.MaxLeases(ctxT(t, 300*time.Millisecond))
	assert.ErrorIs(t, err, context.DeadlineExceeded, "no count yet")

	got := acquireAsync(ctxT(t, 30*time.Second), s, 1)
	waitNodes(t, obs, "/sem/missing/leases", 1) // its node alone, and still it waits
	notGranted(t, got)

	// Data that is not a count is ignored.
	_, err = obs.Create(ctxT(t, 10*time.Second), "/counts/missing", []byte{1}, framework.WithParents())
	require.NoError(t, err)
	notGranted(t, got)

	require.NoError(t, setCount(ctxT(t, 10*time.Second), obs, "/counts/missing", 1))
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	closeAll(t, a.leases)
}

// A shared maximum is not known before the count is read, so asking for more
// leases than it is only refused by waiting, not by ErrTooMany.
func TestSharedCountAcquireAboveCurrentMaxWaitsForARaise(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	require.NoError(t, setCount(ctxT(t, 10*time.Second), obs, "/counts/above", 1))
	s := newShared(t, newClient(t, cl.Addrs()), "/sem/above", "/counts/above")
	waitMax(t, s, 1)
	_, err := s.TryAcquire(ctxT(t, 10*time.Second), 2)
	assert.ErrorIs(t, err, zkrecipes.ErrWouldBlock)

	got := acquireAsync(ctxT(t, 30*time.Second), s, 2)
	waitNodes(t, obs, "/sem/above/leases", 2) // first fits, second waits
	require.NoError(t, setCount(ctxT(t, 10*time.Second), obs, "/counts/above", 2))
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	assert.Len(t, a.leases, 2)
	closeAll(t, a.leases)
}

// A Semaphore that follows a SharedCount leaves no goroutine after Close,
// whether the count node exists or not (before, the watch on it stayed until
// the node next changed).
func TestSharedSemaphoreCloseLeavesNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	require.NoError(t, setCount(ctxT(t, 10*time.Second), c, "/counts/leak", 2))
	before := testkit.LeakBase()
	for _, count := range []string{"/counts/leak", "/counts/missing"} {
		s, err := semaphore.NewShared(c, "/sems/leak", count)
		require.NoError(t, err)
		if count == "/counts/leak" {
			l, err := s.Acquire(ctxT(t, 10*time.Second), 1) // the count has been read
			require.NoError(t, err)
			require.NoError(t, l[0].Release())
		}
		require.NoError(t, s.Close())
	}
	assert.NoError(t, goleak.Find(before...))
}
