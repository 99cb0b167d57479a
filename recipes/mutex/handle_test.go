package mutex_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// Releasing a Hold and acquiring again on the same goroutine gives a new,
// live hold; a second release of the old one is a typed error, not a panic
// and not the new hold's release. (Before: Acquire returned the dead hold
// with a nil error, and the next Release panicked.)
func TestReleasedHoldIsNotHandedOutAgain(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	m := newMutex(t, newClient(t, cl.Addrs()), "/handles/again")

	h1, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, h1.Release())
	<-h1.Done()
	assert.ErrorIs(t, h1.Err(), zkrecipes.ErrReleased)

	h2, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.NoError(t, h2.Err(), "a dead hold handed out again")
	assert.NotEqual(t, h1.Path(), h2.Path())
	assert.Greater(t, h2.Token(), h1.Token())

	assert.ErrorIs(t, h1.Release(), zkrecipes.ErrReleased)
	assert.NoError(t, h2.Err(), "releasing the old hold again ended the new one")
	assert.Len(t, nodes(t, obs, "/handles/again"), 1)

	require.NoError(t, m.Release())
	assert.ErrorIs(t, m.Release(), zkrecipes.ErrNotHeld)
	assert.ErrorIs(t, h2.Release(), zkrecipes.ErrReleased)
	waitNodes(t, obs, "/handles/again", 0)
}

// Each nested acquisition is a handle of its own; the node goes with the
// last one, whichever goroutine releases it.
func TestNestedAcquisitionsAreHandlesOfTheirOwn(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	m := newMutex(t, newClient(t, cl.Addrs()), "/handles/nested")

	outer, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	inner, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.NotSame(t, outer, inner)
	assert.Equal(t, outer.Token(), inner.Token(), "one node, one token")

	errc := make(chan error, 1)
	go func() { errc <- inner.Release() }() // a handle may be released anywhere
	require.NoError(t, <-errc)
	assert.ErrorIs(t, inner.Err(), zkrecipes.ErrReleased)
	assert.NoError(t, outer.Err(), "the inner release ended the outer acquisition")
	assert.Len(t, nodes(t, obs, "/handles/nested"), 1)
	assert.ErrorIs(t, inner.Release(), zkrecipes.ErrReleased)
	assert.Len(t, nodes(t, obs, "/handles/nested"), 1, "a second release counted down again")

	require.NoError(t, outer.Release())
	_, held := m.Held()
	assert.False(t, held)
	waitNodes(t, obs, "/handles/nested", 0)
}

// lostHold acquires path on a client behind a proxy of a fresh server,
// then blackholes the link until the hold's signal fires (zkrecipes.ErrSuspended).
func lostHold(t *testing.T, path string) (*mutex.Mutex, *hold.Hold, *zktest.Proxy) {
	t.Helper()
	p := zktest.Standalone(t).NewProxy()
	m := newMutex(t, newClient(t, p.Addrs()), path)
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	p.Blackhole()
	testkit.WaitClosed(t, h.Done(), 30*time.Second, "the hold was not lost")
	return m, h, p
}

// A nested Acquire on a hold that was lost returns the loss and does not
// count up. (Before: it returned the dead hold with a nil error.)
func TestNestedAcquireOnALostHoldReturnsTheLoss(t *testing.T) {
	m, _, p := lostHold(t, "/handles/lost")
	_, err := m.Acquire(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrSuspended)
	_, err = m.TryAcquire(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)

	p.Heal()
	assert.ErrorIs(t, m.Release(), zkrecipes.ErrHoldLost, "one acquisition to release, not three")
	assert.ErrorIs(t, m.Release(), zkrecipes.ErrNotHeld)
}

// Under the standard policy a hold ends as zkrecipes.ErrSuspended when its link is in
// doubt; once the session is known lost, what the hold reports says so
// too: Err, a nested acquire on it and its release all match
// zkrecipes.ErrSessionLost (and still zkrecipes.ErrSuspended, the first reason). Before, they
// said zkrecipes.ErrSuspended only, for ever.
func TestSuspendedHoldWhoseSessionIsThenLostReportsSessionLost(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	m := newMutex(t, c, "/handles/suspended-then-lost")

	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	testkit.LoseSession(t, p, c)
	testkit.WaitClosed(t, h.Done(), 30*time.Second, "the hold was not lost")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSessionLost)
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSuspended)
	_, err = m.Acquire(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrSessionLost)
	err = m.Release()
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrSessionLost)
	assert.ErrorIs(t, h.Release(), zkrecipes.ErrReleased, "m.Release gave back h, the only acquisition")
}

// A hold lost before its Mutex was closed still says so when released
// afterwards: zkrecipes.ErrHoldLost, besides zkrecipes.ErrReleased and zkrecipes.ErrClosed (the Close gave
// it back). Before, "released by Close" hid the loss, and a caller deciding
// on errors.Is(err, zkrecipes.ErrHoldLost) whether to roll back would not.
func TestHoldLostBeforeCloseStillSaysSoOnRelease(t *testing.T) {
	m, h, p := lostHold(t, "/handles/lost-then-closed")
	require.NoError(t, m.Close())
	p.Heal()
	err := h.Release()
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrReleased)
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
}

// A hold whose node someone else deletes (an operator's deleteall) is lost
// at once, with zkrecipes.ErrNodeDeleted, and says so on Release. (Before: it stayed
// "held" while a newcomer took the lock.)
func TestHoldWhoseNodeIsDeletedBySomeoneElseIsLost(t *testing.T) {
	cl := zktest.Standalone(t)
	operator := newClient(t, cl.Addrs())
	m := newMutex(t, newClient(t, cl.Addrs()), "/handles/deleted")
	waiter := newMutex(t, newClient(t, cl.Addrs()), "/handles/deleted")

	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	got := acquireAsync(waiter, 30*time.Second)
	waitNodes(t, operator, "/handles/deleted", 2)

	require.NoError(t, operator.Delete(context.Background(), h.Path(), -1))
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the holder was not told its node was deleted")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
	g := <-got
	require.NoError(t, g.err)
	assert.ErrorIs(t, m.Release(), zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, m.Release(), zkrecipes.ErrNotHeld)
	require.NoError(t, g.release())
}

// A hold watches its node from the moment it is granted: a deletion right
// after the grant is learnt within a round trip or so, not after a delay in
// which the next waiter already holds. (Before: the watch was set 50 ms
// after the grant, and a deletion in those 50 ms went unseen until then, or
// for ever if the hold was released first.) The median over several rounds
// keeps one slow scheduling from deciding the test; the delay it guards
// against is more than twice the bound.
func TestHoldLearnsADeletionRightAfterItsGrant(t *testing.T) {
	cl := zktest.Standalone(t)
	operator := newClient(t, cl.Addrs())
	m := newMutex(t, newClient(t, cl.Addrs()), "/handles/early")
	var lags []time.Duration
	for range 5 {
		h, err := m.Acquire(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		require.NoError(t, operator.Delete(context.Background(), h.Path(), -1))
		deleted := time.Now()
		testkit.WaitClosed(t, h.Done(), 10*time.Second, "the holder was not told its node was deleted")
		lags = append(lags, time.Since(deleted))
		assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
		assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
	}
	slices.Sort(lags)
	assert.Less(t, lags[len(lags)/2], 20*time.Millisecond,
		"a deletion right after the grant was learnt late: %v", lags)
}

// Releasing a hold whose node someone else deleted does not delete a node
// that another session has made since at the same path: the hold knows its
// node is gone, so nothing at that path is its own. (Before: Release sent
// a delete with version -1 to the path, and took the other node with it.)
func TestReleaseAfterItsNodeWasDeletedSparesANewNodeAtThePath(t *testing.T) {
	cl := zktest.Standalone(t)
	operator := newClient(t, cl.Addrs())
	holder := newClient(t, cl.Addrs())
	m := newMutex(t, holder, "/handles/reused")

	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, operator.Delete(context.Background(), h.Path(), -1))
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the holder was not told its node was deleted")
	_, err = operator.Create(ctxT(t, 10*time.Second), h.Path(), nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)

	assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
	// The holder's session is answered in order: a delete it sent is
	// applied before this look is.
	ok, st, err := holder.Exists(ctxT(t, 10*time.Second), h.Path())
	require.NoError(t, err)
	require.True(t, ok, "the release deleted another session's node at its old path")
	assert.Equal(t, operator.Session().ID, st.EphemeralOwner)
}

// A client's Close ends its holds, which report the loss, and their nodes
// go with its session.
func TestHoldEndsWithItsClientsClose(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	c, err := framework.Dial(ctxT(t, 10*time.Second), cl.Addrs())
	require.NoError(t, err)
	m, err := mutex.New(c, "/handles/shared")
	require.NoError(t, err)
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	require.NoError(t, c.Close())
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the hold did not end with its client")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSessionLost)
	assert.Empty(t, nodes(t, obs, "/handles/shared"), "the lock node outlived its client")
	assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
	require.NoError(t, m.Close())
}

// A client ends its holds before their nodes go at Close: no other session
// can be granted while a hold of it still looks held, and no goroutine of
// the hold outlives the Close. (A client over a shared connection, which
// deleted its nodes at Close, once let another session be granted a few
// hundred microseconds before the hold's Done fired.)
func TestClientEndsItsHoldsBeforeTheirNodesGo(t *testing.T) {
	cl := zktest.Standalone(t)
	other := newMutex(t, newClient(t, cl.Addrs()), "/handles/order")
	for round := range 10 {
		c, err := framework.Dial(ctxT(t, 10*time.Second), cl.Addrs())
		require.NoError(t, err)
		m, err := mutex.New(c, "/handles/order")
		require.NoError(t, err)
		h, err := m.Acquire(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		got := acquireAsync(other, 30*time.Second)
		waitNodes(t, newClient(t, cl.Addrs()), "/handles/order", 2)
		lost := make(chan time.Time, 1)
		go func() { <-h.Done(); lost <- time.Now() }()

		require.NoError(t, c.Close())
		g := <-got
		require.NoError(t, g.err)
		lostAt := <-lost
		assert.True(t, lostAt.Before(g.at), "round %d: granted elsewhere %v before the hold ended", round, lostAt.Sub(g.at))
		require.NoError(t, g.release())
		require.NoError(t, m.Close())
	}
	// Other clients of this test live on: look for the hold's own goroutines.
	assert.Eventually(t, func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "hold.(*Node)")
	}, 5*time.Second, 10*time.Millisecond, "a goroutine of a hold outlived its client")
}
