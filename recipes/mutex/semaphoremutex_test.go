package mutex_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func newSemaphoreMutex(t testing.TB, c *framework.Client, path string, opts ...mutex.SemaphoreMutexOption) *mutex.SemaphoreMutex {
	t.Helper()
	m, err := mutex.NewSemaphoreMutex(c, path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

type leased struct {
	lease *hold.Hold
	err   error
}

func acquireSemaphoreMutexAsync(ctx context.Context, m *mutex.SemaphoreMutex) <-chan leased {
	out := make(chan leased, 1)
	go func() {
		l, err := m.Acquire(ctx)
		out <- leased{l, err}
	}()
	return out
}

var leaseNode = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lease-\d{10}$`)

func TestSemaphoreMutexIsTakenInOneGoroutineAndReleasedInAnother(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	m := newSemaphoreMutex(t, newClient(t, cl.Addrs()), "/smutex/handoff", mutex.WithParticipantID("worker-1"))

	got := <-acquireSemaphoreMutexAsync(ctxT(t, 10*time.Second), m) // the goroutine that took it has ended
	require.NoError(t, got.err)
	assert.True(t, (len(m.Holds()) > 0))
	kids := nodes(t, obs, "/smutex/handoff/leases")
	require.Len(t, kids, 1)
	assert.Regexp(t, leaseNode, kids[0], "Curator's semaphore layout")
	assert.Equal(t, "/smutex/handoff/leases/"+kids[0], got.lease.Path())
	data, st, err := obs.Get(context.Background(), got.lease.Path())
	require.NoError(t, err)
	assert.Equal(t, "worker-1", string(data))
	assert.Equal(t, st.Czxid, got.lease.Token())
	waitNodes(t, obs, "/smutex/handoff/locks", 0)

	require.NoError(t, got.lease.Release()) // from the test's goroutine
	assert.False(t, (len(m.Holds()) > 0))
	<-got.lease.Done()
	assert.ErrorIs(t, got.lease.Err(), zkrecipes.ErrReleased)
	assert.ErrorIs(t, got.lease.Release(), zkrecipes.ErrReleased)
	waitNodes(t, obs, "/smutex/handoff/leases", 0)
}

func TestSemaphoreMutexIsNotReentrant(t *testing.T) {
	cl := zktest.Standalone(t)
	m := newSemaphoreMutex(t, newClient(t, cl.Addrs()), "/smutex/reentry")
	l, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	_, err = m.TryAcquire(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrWouldBlock, "held by this very goroutine")
	assert.ErrorIs(t, err, zkrecipes.ErrWouldBlock)
	_, err = m.Acquire(ctxT(t, 500*time.Millisecond))
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a second Acquire waits for the first release")

	errc := make(chan error)
	go func() { errc <- l.Release() }() // the lease's own Close, from another goroutine
	require.NoError(t, <-errc)
	assert.False(t, (len(m.Holds()) > 0))
	l, err = m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, l.Release())
	assert.ErrorIs(t, l.Release(), zkrecipes.ErrReleased, "Release closed it")
}

func TestSemaphoreMutexExcludesOtherProcesses(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	a := newSemaphoreMutex(t, newClient(t, cl.Addrs()), "/smutex/x")
	b := newSemaphoreMutex(t, newClient(t, cl.Addrs()), "/smutex/x")
	la, err := a.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	_, err = b.TryAcquire(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrWouldBlock)

	got := acquireSemaphoreMutexAsync(ctxT(t, 30*time.Second), b)
	waitNodes(t, obs, "/smutex/x/leases", 2)
	select {
	case g := <-got:
		t.Fatalf("granted while held: %v", g.err)
	case <-time.After(absenceWindow):
	}
	require.NoError(t, la.Release())
	g := <-got
	require.NoError(t, g.err)
	assert.Greater(t, g.lease.Token(), la.Token())
	require.NoError(t, g.lease.Release())
	waitNodes(t, obs, "/smutex/x/leases", 0)
}

// A release names its acquisition: a stale second release of a lease that
// was given back must not end the lease another goroutine took since (and
// let a third client in beside it).
func TestSemaphoreMutexStaleReleaseCannotEndAnotherAcquisition(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	m := newSemaphoreMutex(t, newClient(t, cl.Addrs()), "/smutex/stale")
	other := newSemaphoreMutex(t, newClient(t, cl.Addrs()), "/smutex/stale")

	first, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, first.Release())
	second := <-acquireSemaphoreMutexAsync(ctxT(t, 10*time.Second), m) // another goroutine
	require.NoError(t, second.err)

	assert.ErrorIs(t, first.Release(), zkrecipes.ErrReleased, "a second release of the first acquisition")
	assert.NoError(t, second.lease.Err(), "the stale release ended the second acquisition")
	assert.Len(t, nodes(t, obs, "/smutex/stale/leases"), 1)
	_, err = other.TryAcquire(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrWouldBlock, "a third client got in beside the holder")
	require.NoError(t, second.lease.Release())
}

func TestSemaphoreMutexRejectsBadInput(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, err := mutex.NewSemaphoreMutex(nil, "/smutex/bad")
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	_, err = mutex.NewSemaphoreMutex(c, "smutex")
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidPath)

	m, err := mutex.NewSemaphoreMutex(c, "/smutex/bad")
	require.NoError(t, err)
	require.NoError(t, m.Close())
	_, err = m.Acquire(ctxT(t, time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	assert.Empty(t, nodes(t, c, "/smutex"), "nothing was created")
}

// Curator's InterProcessSemaphoreMutex is a semaphore of one lease on the
// same layout: each side waits while the other holds.
func TestSemaphoreMutexAndCuratorsExcludeEachOther(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	m := newSemaphoreMutex(t, newClient(t, cl.Addrs()), "/smutex/interop")
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	java.Call(t, "smutex-acquire j /smutex/interop", "smutex-acquired j", 10*time.Second)
	_, err := m.TryAcquire(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrWouldBlock)
	got := acquireSemaphoreMutexAsync(ctxT(t, 60*time.Second), m)
	waitNodes(t, obs, "/smutex/interop/leases", 2)
	select {
	case g := <-got:
		t.Fatalf("Go granted while Curator holds: %v", g.err)
	case <-time.After(absenceWindow):
	}
	java.Call(t, "smutex-release j", "smutex-released j", 10*time.Second)
	g := <-got
	require.NoError(t, g.err)

	java.Send("smutex-acquire j /smutex/interop")
	waitNodes(t, obs, "/smutex/interop/leases", 2)
	java.ExpectNone(t, "smutex-acquired", absenceWindow)
	require.NoError(t, g.lease.Release())
	java.Expect(t, "smutex-acquired j", 10*time.Second)
	java.Call(t, "smutex-release j", "smutex-released j", 10*time.Second)
	waitNodes(t, obs, "/smutex/interop/leases", 0)
}
