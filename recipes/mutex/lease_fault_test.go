package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A hold lost to a cut FIRST (zkrecipes.ErrSuspended at 2/3 of the session
// timeout), whose link comes back under the same session, and whose holder
// never releases: the lease's end must still delete the node (the README
// promises it) and let the next waiter in, without the reason changing and
// without anyone being granted before.
func TestLeaseDeletesTheNodeOfAHoldLostToACutFirstWhoseSessionSurvives(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithSessionTimeout(testkit.CutSessionTimeout))
	leased := newMutex(t, c, "/locks/lease-lost-first", mutex.WithLeaseTime(12*time.Second))
	obs := newClient(t, cl.Addrs())
	other := newMutex(t, obs, "/locks/lease-lost-first")

	h, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	end, _ := h.Expiry()
	session := h.SessionID()
	got := acquireAsync(other, 30*time.Second)
	waitNodes(t, obs, "/locks/lease-lost-first", 2)

	p.Blackhole()
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the cut's suspension")
	require.ErrorIs(t, h.Err(), zkrecipes.ErrSuspended)
	p.Heal()
	_, err = c.WaitConnected(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Equal(t, session, c.Session().ID, "the session did not survive the cut")
	require.True(t, time.Now().Before(end), "the cut took longer than the lease")

	g := <-got
	require.NoError(t, g.err)
	assert.False(t, g.at.Before(end), "granted at %v, before the lease's end %v", g.at, end)
	assert.True(t, cl.SessionAlive(session), "the node went with the session, not by the lease")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSuspended, "the first reason must stay")
	assert.NotErrorIs(t, h.Err(), zkrecipes.ErrLeaseExpired)
	require.NoError(t, g.release())
	err = leased.Release()
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	waitNodes(t, obs, "/locks/lease-lost-first", 0)
}

// The lease runs out while the server is
// down (restart): the holder is told, and the node is deleted once the
// server is back, under the same session; the next waiter then gets it.
func TestLeaseRunningOutWhileTheServerIsDownDeletesTheNodeAfterRestart(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs(), framework.WithSessionTimeout(20*time.Second))
	leased := newMutex(t, c, "/locks/lease-restart", mutex.WithLeaseTime(time.Second))
	obs := newClient(t, cl.Addrs())
	other := newMutex(t, obs, "/locks/lease-restart")

	h, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	session := h.SessionID()
	srv := cl.Server(1)
	srv.Stop()
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the loss")
	time.Sleep(time.Until(func() time.Time { e, _ := h.Expiry(); return e }()) + 500*time.Millisecond)
	srv.Start()
	cl.WaitServing(30 * time.Second)

	g, err := other.Acquire(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	assert.Equal(t, session, c.Session().ID)
	assert.True(t, cl.SessionAlive(session), "the node went with the session, not by the lease")
	assert.Greater(t, g.Token(), h.Token())
	require.NoError(t, other.Release())
	assert.ErrorIs(t, leased.Release(), zkrecipes.ErrHoldLost)
	waitNodes(t, obs, "/locks/lease-restart", 0)
}
