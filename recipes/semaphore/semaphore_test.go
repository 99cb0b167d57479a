package semaphore_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
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
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

func TestMain(m *testing.M) {
	if runHelper() {
		return
	}
	os.Exit(zktest.Main(m))
}

// absenceWindow is how long a test watches for a grant that must not happen.
// Absence cannot be proven by waiting for an event; the window is taken only
// after the waiter has verifiably queued (its lease node exists), so a wrong
// grant would come within a few round trips, far inside it.
const absenceWindow = time.Second

var (
	newClient = testkit.Client
	ctxT      = testkit.Ctx
	nodes     = testkit.Children
	waitNodes = testkit.WaitChildren
)

func newSem(t testing.TB, c *framework.Client, path string, max int, opts ...semaphore.Option) *semaphore.Semaphore {
	t.Helper()
	s, err := semaphore.New(c, path, max, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func newShared(t testing.TB, c *framework.Client, path, countPath string) *semaphore.Semaphore {
	t.Helper()
	s, err := semaphore.NewShared(c, path, countPath)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// acquired is what an Acquire on another goroutine came back with.
type acquired struct {
	leases []*hold.Hold
	at     time.Time
	err    error
}

func acquireAsync(ctx context.Context, s *semaphore.Semaphore, n int) <-chan acquired {
	out := make(chan acquired, 1)
	go func() {
		ls, err := s.Acquire(ctx, n)
		out <- acquired{ls, time.Now(), err}
	}()
	return out
}

// receive waits for an asynchronous Acquire to come back.
func receive(t testing.TB, got <-chan acquired, within time.Duration) acquired {
	t.Helper()
	select {
	case a := <-got:
		return a
	case <-time.After(within):
		t.Fatalf("acquire did not return within %v", within)
		return acquired{}
	}
}

// notGranted checks that an asynchronous Acquire stays blocked (see
// absenceWindow).
func notGranted(t testing.TB, got <-chan acquired) {
	t.Helper()
	select {
	case a := <-got:
		t.Fatalf("granted while it must wait: err=%v", a.err)
	case <-time.After(absenceWindow):
	}
}

func closeAll(t testing.TB, leases []*hold.Hold) {
	t.Helper()
	for _, l := range leases {
		require.NoError(t, l.Release())
	}
}

var leaseNode = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lease-\d{10}$`)

func TestLeaseIsCuratorNodeWithParticipantIDAndToken(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	obs := newClient(t, cl.Addrs())
	s := newSem(t, c, "/sem/a", 2, semaphore.WithParticipantID("worker-1"))

	leases, err := s.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	require.Len(t, leases, 1)
	l := leases[0]
	kids := nodes(t, obs, "/sem/a/leases")
	require.Len(t, kids, 1)
	assert.Regexp(t, leaseNode, kids[0])
	assert.Equal(t, "/sem/a/leases/"+kids[0], l.Path())
	data, st, err := obs.Get(context.Background(), l.Path())
	require.NoError(t, err)
	assert.Equal(t, "worker-1", string(data))
	assert.Equal(t, st.Czxid, l.Token())
	assert.Equal(t, c.Session().ID, st.EphemeralOwner)
	assert.Equal(t, c.Session().ID, l.SessionID())
	assert.Nil(t, l.Err())
	waitNodes(t, obs, "/sem/a/locks", 0) // the internal mutex is released at once
	assert.Equal(t, []*hold.Hold{l}, s.Holds())

	require.NoError(t, l.Release())
	waitNodes(t, obs, "/sem/a/leases", 0)
	<-l.Done()
	assert.ErrorIs(t, l.Err(), zkrecipes.ErrReleased)
	assert.ErrorIs(t, l.Release(), zkrecipes.ErrReleased, "a second Close")
	assert.Empty(t, s.Holds())
}

func TestMaxLeasesAreHeldAtOnceAndTheNextWaits(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const max = 3
	var held []*hold.Hold
	for range max {
		s := newSem(t, newClient(t, cl.Addrs()), "/sem/max", max)
		ls, err := s.Acquire(ctxT(t, 10*time.Second), 1)
		require.NoError(t, err)
		held = append(held, ls...)
	}
	next := newSem(t, newClient(t, cl.Addrs()), "/sem/max", max)
	got := acquireAsync(ctxT(t, 30*time.Second), next, 1)
	waitNodes(t, obs, "/sem/max/leases", max+1) // it queued: its node is there
	notGranted(t, got)

	require.NoError(t, held[1].Release())
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	for _, l := range held {
		assert.Greater(t, a.leases[0].Token(), l.Token(), "tokens grow with every grant")
	}
	closeAll(t, a.leases)
	closeAll(t, []*hold.Hold{held[0], held[2]})
	waitNodes(t, obs, "/sem/max/leases", 0)
}

func TestLeasesNeverExceedMaxUnderContention(t *testing.T) {
	cl := zktest.Standalone(t)
	const max, contenders, rounds = 3, 8, 5
	var inside, peak atomic.Int32
	var wg sync.WaitGroup
	for range contenders {
		s := newSem(t, newClient(t, cl.Addrs()), "/sem/contention", max)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				ls, err := s.Acquire(ctxT(t, 60*time.Second), 1)
				if !assert.NoError(t, err) {
					return
				}
				n := inside.Add(1)
				assert.LessOrEqual(t, n, int32(max), "more leases held than the maximum")
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(5 * time.Millisecond) // hold briefly so others queue up
				inside.Add(-1)
				assert.NoError(t, ls[0].Release())
			}
		}()
	}
	wg.Wait()
	t.Logf("peak leases held at once: %d of %d", peak.Load(), max)
}

func TestAcquireSeveralIsAllOrNone(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newSem(t, newClient(t, cl.Addrs()), "/sem/many", 3)
	otherClient := newClient(t, cl.Addrs())
	other := newSem(t, otherClient, "/sem/many", 3)

	two, err := holder.Acquire(ctxT(t, 10*time.Second), 2)
	require.NoError(t, err)
	require.Len(t, two, 2)
	assert.NotEqual(t, two[0].Path(), two[1].Path())

	// Only one lease is free: the other waits for two and gives up with none.
	_, err = other.Acquire(ctxT(t, 500*time.Millisecond), 2)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, otherClient.Drain(ctxT(t, 10*time.Second)))
	assert.ElementsMatch(t, []string{framework.Base(two[0].Path()), framework.Base(two[1].Path())},
		nodes(t, obs, "/sem/many/leases"), "the lease it had taken was given back")
	assert.Empty(t, nodes(t, obs, "/sem/many/locks"), "the internal mutex was released")
	assert.Empty(t, other.Holds())

	require.NoError(t, two[0].Release())
	got, err := other.Acquire(ctxT(t, 10*time.Second), 2)
	require.NoError(t, err)
	assert.Len(t, got, 2)
	closeAll(t, got)
	require.NoError(t, two[1].Release())
}

// A waiter for two leases that has taken one and waits for the second gives
// the first back when cancelled, and releases the internal mutex.
func TestCancelHalfwayThroughSeveralGivesBackWhatItTook(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newSem(t, newClient(t, cl.Addrs()), "/sem/half", 3)
	otherClient := newClient(t, cl.Addrs())
	other := newSem(t, otherClient, "/sem/half", 3)
	two, err := holder.Acquire(ctxT(t, 10*time.Second), 2)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := acquireAsync(ctx, other, 2)
	// The holder's two, the waiter's first (fits) and second (waits).
	waitNodes(t, obs, "/sem/half/leases", 4)
	waitNodes(t, obs, "/sem/half/locks", 1)
	cancel()
	a := receive(t, got, 10*time.Second)
	assert.ErrorIs(t, a.err, context.Canceled)
	assert.Nil(t, a.leases)
	require.NoError(t, otherClient.Drain(ctxT(t, 10*time.Second)))
	assert.Len(t, nodes(t, obs, "/sem/half/leases"), 2)
	assert.Empty(t, nodes(t, obs, "/sem/half/locks"))
	closeAll(t, two)
}

func TestTryAcquireTakesOnlyWhatIsFreeAndLeavesNothingOtherwise(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	c := newClient(t, cl.Addrs())
	s := newSem(t, c, "/sem/try", 2)
	ctx := ctxT(t, 10*time.Second)

	first, err := s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx, 2)
	assert.ErrorIs(t, err, zkrecipes.ErrWouldBlock, "one free, two asked")
	second, err := s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx, 1)
	assert.ErrorIs(t, err, zkrecipes.ErrWouldBlock, "none free")

	require.NoError(t, c.Drain(ctx))
	assert.ElementsMatch(t, []string{framework.Base(first[0].Path()), framework.Base(second[0].Path())},
		nodes(t, obs, "/sem/try/leases"), "failed tries left nothing")
	assert.Empty(t, nodes(t, obs, "/sem/try/locks"), "a try never takes the internal mutex")

	require.NoError(t, first[0].Release())
	third, err := s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	closeAll(t, append(second, third...))
}

func TestTryAcquireFailsWhileAnotherWaits(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newSem(t, newClient(t, cl.Addrs()), "/sem/try-wait", 1)
	waiter := newSem(t, newClient(t, cl.Addrs()), "/sem/try-wait", 1)
	tryer := newSem(t, newClient(t, cl.Addrs()), "/sem/try-wait", 1)
	h, err := holder.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	got := acquireAsync(ctxT(t, 30*time.Second), waiter, 1)
	waitNodes(t, obs, "/sem/try-wait/leases", 2)

	require.NoError(t, h[0].Release())
	a := receive(t, got, 10*time.Second) // the waiter's node was counted first
	require.NoError(t, a.err)
	_, err = tryer.TryAcquire(ctxT(t, 10*time.Second), 1)
	assert.ErrorIs(t, err, zkrecipes.ErrWouldBlock)
	closeAll(t, a.leases)
}

func TestLeaseIsClosedByAnyGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	s := newSem(t, newClient(t, cl.Addrs()), "/sem/handle", 1)
	got := acquireAsync(ctxT(t, 10*time.Second), s, 1)
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)

	errc := make(chan error, 2)
	go func() { errc <- a.leases[0].Release() }()
	require.NoError(t, <-errc)
	go func() { errc <- a.leases[0].Release() }()
	assert.ErrorIs(t, <-errc, zkrecipes.ErrReleased)
	waitNodes(t, obs, "/sem/handle/leases", 0)
}

func TestBadInputIsRejectedBeforeAnythingIsSent(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, err := semaphore.New(nil, "/sem/x", 1)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	_, err = semaphore.NewShared(nil, "/sem/x", "/counts/x")
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	for _, p := range []string{"", "sem", "/sem/", "/a//b", "/a/../b"} {
		_, err := semaphore.New(c, p, 1)
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidPath, "path %q", p)
		_, err = semaphore.NewShared(c, p, "/counts/x")
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidPath, "path %q", p)
		_, err = semaphore.NewShared(c, "/sem/x", p)
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidPath, "count path %q", p)
	}
	for _, max := range []int{0, -1} {
		_, err := semaphore.New(c, "/sem/x", max)
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument, "max %d", max)
	}
	_, err = semaphore.New(c, "/sem/x", 1, semaphore.WithParticipantID(""))
	assert.Error(t, err)

	s, err := semaphore.New(c, "/sem/x", 2)
	require.NoError(t, err)
	ctx := ctxT(t, time.Second)
	for _, n := range []int{0, -1} {
		_, err = s.Acquire(ctx, n)
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
		_, err = s.TryAcquire(ctx, n)
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	}
	_, err = s.Acquire(ctx, 3)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	_, err = s.TryAcquire(ctx, 3)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	require.NoError(t, s.Close())
	_, err = s.Acquire(ctx, 1)
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	_, err = s.TryAcquire(ctx, 1)
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	_, err = s.MaxLeases(ctx)
	assert.NoError(t, err, "a fixed maximum is known without the server")

	ok, _, err := c.Exists(ctx, "/sem")
	require.NoError(t, err)
	assert.False(t, ok, "nothing was created")
}

func TestCloseEndsWaitsAndClosesLeases(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newSem(t, newClient(t, cl.Addrs()), "/sem/close", 1)
	waiter, err := semaphore.New(newClient(t, cl.Addrs()), "/sem/close", 1)
	require.NoError(t, err)
	h, err := holder.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	got := acquireAsync(context.Background(), waiter, 1)
	waitNodes(t, obs, "/sem/close/leases", 2)

	require.NoError(t, waiter.Close())
	a := receive(t, got, 10*time.Second)
	assert.ErrorIs(t, a.err, zkrecipes.ErrClosed)
	require.NoError(t, holder.Close())
	<-h[0].Done()
	assert.ErrorIs(t, h[0].Err(), zkrecipes.ErrReleased)
	assert.ErrorIs(t, h[0].Release(), zkrecipes.ErrReleased, "closed by the Semaphore already")
	waitNodes(t, obs, "/sem/close/leases", 0)
	waitNodes(t, obs, "/sem/close/locks", 0)
}

func TestParticipantsInSequenceOrder(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	var sems []*semaphore.Semaphore
	for _, id := range []string{"a", "b", "c"} {
		sems = append(sems, newSem(t, newClient(t, cl.Addrs()), "/sem/p", 2, semaphore.WithParticipantID(id)))
	}
	for _, s := range sems[:2] {
		_, err := s.Acquire(ctxT(t, 10*time.Second), 1)
		require.NoError(t, err)
	}
	go func() { _, _ = sems[2].Acquire(ctxT(t, 30*time.Second), 1) }()
	waitNodes(t, obs, "/sem/p/leases", 3)

	ids, err := sems[0].Participants(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, ids, "holders, then the waiter")
	paths, err := sems[1].ParticipantNodes(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Len(t, paths, 3)
	assert.True(t, slices.IsSorted([]string{paths[0][len(paths[0])-10:], paths[1][len(paths[1])-10:], paths[2][len(paths[2])-10:]}))
}

func TestFencingTokenGrowsAcrossLeasesAndDirectoryRecreation(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	c := newClient(t, cl.Addrs())
	s := newSem(t, c, "/sem/fence", 2)
	var last int64
	for round := 0; round < 3; round++ {
		ls, err := s.Acquire(ctxT(t, 10*time.Second), 2)
		require.NoError(t, err)
		for _, l := range ls {
			assert.Greater(t, l.Token(), last)
			last = max(last, l.Token())
		}
		closeAll(t, ls)
		require.NoError(t, c.Drain(ctxT(t, 10*time.Second)))
		waitNodes(t, obs, "/sem/fence/leases", 0)
		// Delete the directories outright, so the next lease's sequence
		// number restarts at 0000000000; the token still grows.
		// (The server may have removed the empty containers already.)
		err = obs.Delete(ctxT(t, 10*time.Second), "/sem/fence", -1, framework.WithChildren())
		if !errors.Is(err, zk.ErrNoNode) {
			require.NoError(t, err)
		}
	}
}
