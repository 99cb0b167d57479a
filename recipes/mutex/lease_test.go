package mutex_test

import (
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
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// lostAt returns a channel that yields when h's signal fired, as seen by a
// goroutine of its own (not when the test got round to looking).
func lostAt(h *hold.Hold) <-chan time.Time {
	out := make(chan time.Time, 1)
	go func() { <-h.Done(); out <- time.Now() }()
	return out
}

// A holder that forgets its hold keeps the others out for the lease time,
// not for as long as its session lives: the hold ends by itself, the
// holder is told first, then the node goes and the next waiter is granted.
func TestLeaseEndsAForgottenHoldAndTheNextWaiterGetsIt(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	leased := newMutex(t, c, "/locks/lease", mutex.WithLeaseTime(500*time.Millisecond))
	other := newMutex(t, newClient(t, cl.Addrs()), "/locks/lease")
	mustCreateNode(t, c, "/cfg", "v0")

	before := time.Now()
	h, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	end, ok := h.Expiry()
	require.True(t, ok, "a hold of a leased mutex has an expiry")
	assert.WithinRange(t, end, before.Add(500*time.Millisecond), time.Now().Add(500*time.Millisecond))
	lost := lostAt(h)
	got := acquireAsync(other, 30*time.Second)

	g := <-got
	require.NoError(t, g.err)
	at := <-lost
	assert.False(t, at.Before(end), "ended at %v, before its lease's end %v", at, end)
	assert.True(t, at.Before(g.at), "the holder learned at %v, the next one was granted at %v", at, g.at)
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrLeaseExpired)
	assert.Greater(t, g.hold.Token(), h.Token())

	// What the forgetful holder does now is refused where ZooKeeper can
	// refuse it, and its late Release says why.
	_, err = h.Fenced(ctxT(t, 10*time.Second), &zk.SetDataRequest{Path: "/cfg", Data: []byte("late"), Version: -1})
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrLeaseExpired)
	err = leased.Release()
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrLeaseExpired)
	assert.ErrorIs(t, h.Extend(time.Second), zkrecipes.ErrReleased)
	require.NoError(t, g.release())
	waitNodes(t, c, "/locks/lease", 0) // the other client's delete is sent, not yet seen here
}

// Extend keeps a hold past its first lease; it never shortens one; and a
// reentrant acquire renews the lease of the node it shares.
func TestExtendKeepsTheHoldPastItsFirstLease(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	leased := newMutex(t, c, "/locks/extend", mutex.WithLeaseTime(300*time.Millisecond))

	h, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	first, _ := h.Expiry()
	require.NoError(t, h.Extend(5*time.Second))
	later, _ := h.Expiry()
	assert.True(t, later.After(first.Add(4*time.Second)), "extended to %v from %v", later, first)
	require.NoError(t, h.Extend(time.Millisecond))
	same, _ := h.Expiry()
	assert.Equal(t, later, same, "Extend shortened the lease")

	again, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	shared, _ := again.Expiry()
	assert.Equal(t, later, shared, "a reentrant acquire has the node's lease, and does not shorten it")

	// The first lease's end passing is the event under test: there is no
	// condition to wait on but the clock.
	time.Sleep(time.Until(first) + 300*time.Millisecond)
	assert.NoError(t, h.Err())
	assert.NoError(t, again.Err())
	assert.Len(t, nodes(t, c, "/locks/extend"), 1)

	require.NoError(t, again.Release())
	require.NoError(t, leased.Release())
	assert.Empty(t, nodes(t, c, "/locks/extend"))
	assert.ErrorIs(t, h.Extend(time.Second), zkrecipes.ErrReleased)
}

func TestLeaseTimeBadInputIsRefusedBeforeAnythingIsSent(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := mutex.New(c, "/locks/bad", mutex.WithLeaseTime(d))
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument, "lease time %v", d)
		_, err = mutex.NewSemaphoreMutex(c, "/locks/bad", mutex.WithLeaseTime(d))
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument, "lease time %v", d)
	}
	plain := newMutex(t, c, "/locks/bad")
	h, err := plain.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	_, ok := h.Expiry()
	assert.False(t, ok)
	assert.ErrorIs(t, h.Extend(time.Second), zkrecipes.ErrNoLeaseTime)

	leased := newMutex(t, c, "/locks/bad2", mutex.WithLeaseTime(time.Hour))
	lh, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.ErrorIs(t, lh.Extend(0), zkrecipes.ErrInvalidArgument)
	assert.ErrorIs(t, lh.Extend(-time.Second), zkrecipes.ErrInvalidArgument)
	require.NoError(t, leased.Release())
	require.NoError(t, plain.Release())
	assert.Empty(t, nodes(t, c, "/locks/bad"))
	assert.Empty(t, nodes(t, c, "/locks/bad2"))
}

// The lease runs out while the holder's link is down: the holder is told
// at once, and the node goes as soon as the link is back, under the same
// session, although the holder never releases.
func TestLeaseRunningOutDuringACutDeletesTheNodeOnceTheLinkIsBack(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithSessionTimeout(6*time.Second))
	leased := newMutex(t, c, "/locks/lease-cut", mutex.WithLeaseTime(time.Second))
	obs := newClient(t, cl.Addrs())
	other := newMutex(t, obs, "/locks/lease-cut")

	h, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	session := c.Session()
	p.Blackhole()
	testkit.WaitClosed(t, h.Done(), 5*time.Second, "the lease's end during the cut")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrLeaseExpired)
	assert.Len(t, nodes(t, obs, "/locks/lease-cut"), 1, "deleted with the link down?")
	p.Heal()

	g, err := other.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, session.ID, c.Session().ID, "the node went with the session, not by the lease")
	assert.True(t, cl.SessionAlive(session.ID))
	assert.Greater(t, g.Token(), h.Token())
	require.NoError(t, other.Release())
	assert.ErrorIs(t, leased.Release(), zkrecipes.ErrLeaseExpired)
	waitNodes(t, obs, "/locks/lease-cut", 0)
}

// A hold lost to an expired session keeps its first reason when its lease
// runs out later, and nothing is deleted in another session's name.
func TestLeaseOfAHoldLostWithItsSessionKeepsTheFirstReason(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	leased := newMutex(t, c, "/locks/lease-expired", mutex.WithLeaseTime(8*time.Second))
	h, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	end, _ := h.Expiry()
	testkit.LoseSession(t, p, c)
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the loss")
	require.True(t, time.Now().Before(end), "the session took longer to lose than the lease")
	require.ErrorIs(t, h.Err(), zkrecipes.ErrSessionLost)
	// Past the lease's end: it must not overwrite the reason.
	time.Sleep(time.Until(end) + 200*time.Millisecond)
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSessionLost)
	assert.NotErrorIs(t, h.Err(), zkrecipes.ErrLeaseExpired)
	err = leased.Release()
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.NotErrorIs(t, err, zkrecipes.ErrLeaseExpired)
	h2, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, h2.Release())
}

// The node deleted by someone else during the lease: the hold ends with
// zkrecipes.ErrNodeDeleted at once, and its lease's end later changes nothing and
// deletes nothing (another's node at the path is not the holder's).
func TestLeaseOfAHoldWhoseNodeWasDeletedKeepsThatReason(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	op := newClient(t, cl.Addrs())
	leased := newMutex(t, c, "/locks/lease-deleted", mutex.WithLeaseTime(time.Second))
	other := newMutex(t, op, "/locks/lease-deleted")
	h, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	end, _ := h.Expiry()
	require.NoError(t, op.Delete(ctxT(t, 10*time.Second), h.Path(), -1))
	testkit.WaitClosed(t, h.Done(), 5*time.Second, "the deletion")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
	g, err := other.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	// The lease's end passing is the event under test.
	time.Sleep(time.Until(end) + 300*time.Millisecond)
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
	assert.NoError(t, g.Err(), "the lease's end touched the next holder")
	assert.Len(t, nodes(t, op, "/locks/lease-deleted"), 1)
	err = leased.Release()
	assert.ErrorIs(t, err, zkrecipes.ErrNodeDeleted)
	assert.NotErrorIs(t, err, zkrecipes.ErrLeaseExpired)
	require.NoError(t, other.Release())
}

// The lease runs out while the holder's requests are dropped (its link
// looks alive to the server's events): it is told at the lease's end all
// the same, and its node goes once its requests get through again.
func TestLeaseRunningOutWhileRequestsAreDroppedDeletesTheNodeAfterwards(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithSessionTimeout(6*time.Second))
	obs := newClient(t, cl.Addrs())
	leased := newMutex(t, c, "/locks/lease-oneway", mutex.WithLeaseTime(time.Second))
	h, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	session := c.Session().ID
	p.DropRequests()
	testkit.WaitClosed(t, h.Done(), 5*time.Second, "the lease's end during the one-way fault")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrLeaseExpired)
	p.Heal()
	waitNodes(t, obs, "/locks/lease-oneway", 0)
	assert.True(t, cl.SessionAlive(session), "the node went with the session, not by the lease")
	assert.ErrorIs(t, leased.Release(), zkrecipes.ErrLeaseExpired)
}
