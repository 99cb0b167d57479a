package mutex_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A one-off Acquire and a Mutex on one path are one lock: the same
// Curator node, data and token, and neither gets in while the other holds.
func TestOneShotIsExclusiveWithAMutex(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	const path = "/oneshot/ex"
	m := newMutex(t, newClient(t, cl.Addrs()), path)

	h, err := mutex.Acquire(ctxT(t, 10*time.Second), c, path, mutex.WithParticipantID("worker-1"))
	require.NoError(t, err)
	kids := nodes(t, c, path)
	require.Len(t, kids, 1)
	assert.Regexp(t, curatorNode, kids[0])
	assert.Equal(t, path+"/"+kids[0], h.Path())
	data, st, err := c.Get(context.Background(), h.Path())
	require.NoError(t, err)
	assert.Equal(t, "worker-1", string(data))
	assert.Equal(t, st.Czxid, h.Token())
	assert.Nil(t, h.Err())

	_, err = m.TryAcquire(ctxT(t, 10*time.Second))
	require.ErrorIs(t, err, zkrecipes.ErrWouldBlock)
	_, err = m.Acquire(testkit.Expired())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, h.Release())

	mh, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Greater(t, mh.Token(), h.Token(), "fencing tokens grow from holder to holder")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = mutex.Acquire(ctx, c, path)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "mutex "+path+": ")
	require.NoError(t, m.Release())
	h2, err := mutex.Acquire(ctxT(t, 10*time.Second), c, path)
	require.NoError(t, err)
	require.NoError(t, h2.Release())
	assert.Empty(t, nodes(t, c, path))
}

// One-off waiters and a Mutex's waiters share one FIFO queue.
func TestOneShotQueuesInOrderWithMutexWaiters(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/oneshot/fifo"
	holder := newMutex(t, newClient(t, cl.Addrs()), path)
	_, err := holder.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	enter := func(name string, acquire func(context.Context) (*hold.Hold, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := acquire(ctxT(t, 30*time.Second))
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			assert.NoError(t, h.Release())
		}()
	}
	oneShot := func(c *framework.Client) func(context.Context) (*hold.Hold, error) {
		return func(ctx context.Context) (*hold.Hold, error) { return mutex.Acquire(ctx, c, path) }
	}
	shared := newClient(t, cl.Addrs()) // one-offs of one client contend like processes
	waiters := []struct {
		name    string
		acquire func(context.Context) (*hold.Hold, error)
	}{
		{"mutex-1", newMutex(t, newClient(t, cl.Addrs()), path).Acquire},
		{"oneshot-1", oneShot(shared)},
		{"mutex-2", newMutex(t, newClient(t, cl.Addrs()), path).Acquire},
		{"oneshot-2", oneShot(shared)},
	}
	for i, w := range waiters {
		enter(w.name, w.acquire)
		waitNodes(t, obs, path, i+2) // queued before the next one enters
	}
	require.NoError(t, holder.Release())
	wg.Wait()
	assert.Equal(t, []string{"mutex-1", "oneshot-1", "mutex-2", "oneshot-2"}, order)
	waitNodes(t, obs, path, 0) // the last delete is another client's: on its way

}

// Release deletes the node and leaves nothing behind, no goroutine
// either; a second Release says ErrReleased, naming the recipe and path.
func TestOneShotReleaseLeavesNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	const path = "/oneshot/release"
	before := testkit.LeakBase()

	h, err := mutex.Acquire(ctxT(t, 10*time.Second), c, path)
	require.NoError(t, err)
	require.NoError(t, h.Release())
	assert.Empty(t, nodes(t, c, path), "the node was left behind")
	testkit.WaitClosed(t, h.Done(), time.Second, "Done did not close at Release")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrReleased)
	err = h.Release()
	require.ErrorIs(t, err, zkrecipes.ErrReleased)
	assert.ErrorContains(t, err, "mutex "+path+": ")
	assert.NoError(t, goleak.Find(before...), "a released one-off hold left a goroutine")
}

// A wait that ends (cancelled, past its deadline, its client closed)
// leaves no node in the queue.
func TestOneShotEndedWaitLeavesNoNode(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/oneshot/cancel"
	holder := newMutex(t, newClient(t, cl.Addrs()), path)
	_, err := holder.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	c := newClient(t, cl.Addrs())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := mutex.Acquire(ctx, c, path); done <- err }()
	waitNodes(t, obs, path, 2)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	waitNodes(t, obs, path, 1)

	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = mutex.Acquire(ctx, c, path)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	waitNodes(t, obs, path, 1)

	closing := newClient(t, cl.Addrs())
	go func() { _, err := mutex.Acquire(context.Background(), closing, path); done <- err }()
	waitNodes(t, obs, path, 2)
	require.NoError(t, closing.Close())
	err = <-done
	require.ErrorIs(t, err, zkrecipes.ErrClosed)
	assert.ErrorContains(t, err, "mutex "+path+": ")
	waitNodes(t, obs, path, 1)
}

// Bad input is refused with the sentinel New and Acquire give, naming the
// recipe and path, before anything is sent.
func TestOneShotRefusesBadInputBeforeSending(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	other := newClient(t, cl.Addrs())
	closed := newClient(t, cl.Addrs())
	require.NoError(t, closed.Close())
	ctx := ctxT(t, 10*time.Second)
	var nilCtx context.Context
	acquire := func(ctx context.Context, c *framework.Client, path string, opts ...mutex.Option) func() error {
		return func() error { _, err := mutex.Acquire(ctx, c, path, opts...); return err }
	}

	before := req.Count(t, "")
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"nil ctx":                 testkit.Named("mutex /x: ", acquire(nilCtx, c, "/x"), zkrecipes.ErrNilContext, zkrecipes.ErrInvalidArgument),
		"nil client":              testkit.Named("mutex /x: ", acquire(ctx, nil, "/x"), zkrecipes.ErrInvalidArgument),
		"bad path":                testkit.Named("mutex x/: ", acquire(ctx, c, "x/"), zkrecipes.ErrInvalidPath),
		"closed client":           testkit.Named("mutex /x: ", acquire(ctx, closed, "/x"), zkrecipes.ErrClosed),
		"empty participant id":    testkit.Named("mutex /x: ", acquire(ctx, c, "/x", mutex.WithParticipantID("")), zkrecipes.ErrInvalidArgument),
		"lease time not positive": testkit.Named("mutex /x: ", acquire(ctx, c, "/x", mutex.WithLeaseTime(0)), zkrecipes.ErrInvalidArgument),
		"nil watcher":             testkit.Named("mutex /x: ", acquire(ctx, c, "/x", mutex.WithWatcher(nil)), zkrecipes.ErrInvalidArgument),
		"another client's watcher": testkit.Named("mutex /x: ",
			acquire(ctx, c, "/x", mutex.WithWatcher(engine.NewWatcher(other))), zkrecipes.ErrInvalidArgument),
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")
	testkit.RefusesNilContext(t, map[string]func() error{"Acquire": acquire(nilCtx, c, "/x")})
}

// The hold's loss signal fires with its session's loss, as a Mutex's
// hold's does; its Release then says so and the node is gone.
func TestOneShotHoldIsLostWithItsSession(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/oneshot/lost"
	p := cl.NewProxy()
	// Session-only: the link's suspension before the expiry is not the
	// hold's reason.
	c := newClient(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	h, err := mutex.Acquire(ctxT(t, 10*time.Second), c, path)
	require.NoError(t, err)

	testkit.LoseSession(t, p, c)
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the hold was not lost with its session")
	require.ErrorIs(t, h.Err(), zkrecipes.ErrSessionLost)
	err = h.Release()
	require.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	require.ErrorIs(t, err, zkrecipes.ErrSessionLost)
	assert.ErrorContains(t, err, "mutex "+path+": ")
	waitNodes(t, obs, path, 0)

	// The lock is free for the next one, on the client's new session.
	h2, err := mutex.Acquire(ctxT(t, 10*time.Second), c, path)
	require.NoError(t, err)
	require.NoError(t, h2.Release())
}

// WithLeaseTime bounds a one-off hold as a Mutex's: it ends by itself and
// its node goes.
func TestOneShotLeaseEndsTheHold(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	const path = "/oneshot/lease"
	h, err := mutex.Acquire(ctxT(t, 10*time.Second), c, path, mutex.WithLeaseTime(200*time.Millisecond))
	require.NoError(t, err)
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the lease did not end the hold")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrLeaseExpired)
	waitNodes(t, c, path, 0)
	assert.ErrorIs(t, h.Release(), zkrecipes.ErrLeaseExpired)
}
