package mutex_test

import (
	"sync/atomic"
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

// Under the session-only policy a hold is trusted until its session is
// lost: a reconnect within the session does not end it, even while a
// goroutine reads its Err all along (each read checks the link's proof of
// life, which a new link must not start from nothing).
func TestSessionOnlyHoldOutlastsAReconnectWhileItsErrIsReadWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t) // a reconnect with watches set: go-zookeeper v1.0.4 races on lastZxid
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	m := newMutex(t, c, "/locks/session-only-reconnect")
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	s := c.Session()

	var stop atomic.Bool
	var seen atomic.Pointer[error]
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if err := h.Err(); err != nil {
				seen.CompareAndSwap(nil, &err)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	p.Cut()
	<-s.Suspended
	_, err = c.WaitConnected(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	stop.Store(true)
	<-done
	require.Equal(t, s.ID, c.Session().ID, "a reconnect within the session")
	if e := seen.Load(); e != nil {
		t.Fatalf("the hold ended during the reconnect: %v", *e)
	}
	assert.NoError(t, h.Err())
}

// A MultiLock hands out no hold that was lost while it waited for a later
// lock: all are released, and the error says which was lost.
func TestMultiLockHandsOutNoHoldLostWhileItWaitedForTheNextWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t) // a reconnect with watches set: go-zookeeper v1.0.4 races on lastZxid
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	other := newMutex(t, newClient(t, cl.Addrs()), "/locks/multi-lost-b")
	hb, err := other.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	ml, err := mutex.NewMultiLock(newMutex(t, c, "/locks/multi-lost-a"), newMutex(t, c, "/locks/multi-lost-b"))
	require.NoError(t, err)
	type result struct {
		hs  []*hold.Hold
		err error
	}
	out := make(chan result, 1)
	go func() {
		hs, err := ml.Acquire(ctxT(t, 60*time.Second))
		out <- result{hs, err}
	}()
	waitNodes(t, newClient(t, cl.Addrs()), "/locks/multi-lost-b", 2) // A held, queued on B
	s := c.Session()
	p.Cut() // the link drops: A's hold is lost; the session lives on
	<-s.Suspended
	_, err = c.WaitConnected(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, hb.Release()) // B's turn comes
	r := <-out
	require.ErrorIs(t, r.err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, r.err, zkrecipes.ErrSuspended)
	assert.Contains(t, r.err.Error(), "lock 0")
	assert.Nil(t, r.hs)
	waitNodes(t, newClient(t, cl.Addrs()), "/locks/multi-lost-a", 0) // nothing left behind
}
