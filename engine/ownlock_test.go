package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// acquired is the end of an acquire of a lock of a user's own.
type acquired struct {
	h   *hold.Hold
	at  time.Time
	err error
}

func acquireAsync(t *testing.T, l slots) <-chan acquired {
	out := make(chan acquired, 1)
	go func() {
		h, err := l.Acquire(testkit.Ctx(t, 90*time.Second))
		out <- acquired{h, time.Now(), err}
	}()
	return out
}

func faultClient(t *testing.T, p *zktest.Proxy) *framework.Client {
	return testkit.Client(t, p.Addrs(), framework.WithSessionTimeout(4*time.Second))
}

// A lock of a user's own on the public engine (the Example's slots, one
// slot) stays exclusive when its holder's link is cut: the holder is told
// before the server expires its session, nobody holds while that session
// lives, and no node is left behind.
func TestALockOfYourOwnStaysExclusiveUnderACutLink(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	obs := testkit.Client(t, cl.Addrs())
	holder := slots{client: faultClient(t, p), dir: "/own/cut", n: 1}
	waiter := slots{client: testkit.Client(t, cl.Addrs()), dir: "/own/cut", n: 1}

	h, err := holder.Acquire(testkit.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	got := acquireAsync(t, waiter)
	testkit.WaitChildren(t, obs, "/own/cut", 2)

	lost := make(chan time.Time, 1)
	go func() { <-h.Done(); lost <- time.Now() }()
	p.Blackhole()

	g := <-got
	require.NoError(t, g.err)
	assert.False(t, cl.SessionAlive(h.SessionID()), "granted while the holder's session was alive")
	lostAt := <-lost
	assert.True(t, lostAt.Before(g.at), "holder told at %v, waiter granted at %v", lostAt, g.at)
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSuspended)
	assert.Greater(t, g.h.Token(), h.Token())

	p.Heal()
	assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
	require.NoError(t, g.h.Release())
	testkit.WaitChildren(t, obs, "/own/cut", 0)
}

// The holder's session expires on the server: it is told, the next waiter
// holds only after the session is gone, and no node is left behind.
func TestALockOfYourOwnStaysExclusiveUnderASessionExpiry(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	obs := testkit.Client(t, cl.Addrs())
	holderClient := faultClient(t, p)
	holder := slots{client: holderClient, dir: "/own/expiry", n: 1}
	waiter := slots{client: testkit.Client(t, cl.Addrs()), dir: "/own/expiry", n: 1}

	h, err := holder.Acquire(testkit.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	got := acquireAsync(t, waiter)
	testkit.WaitChildren(t, obs, "/own/expiry", 2)

	zktest.ExpireSession(t, p, holderClient.Session().ID)
	g := <-got
	require.NoError(t, g.err)
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the expired holder's loss signal")
	assert.Error(t, h.Err())

	assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
	require.NoError(t, g.h.Release())
	testkit.WaitChildren(t, obs, "/own/expiry", 0)
}

// A waiter whose session expires while it queues queues again with a new
// node, and the old one does not stay to block the queue.
func TestALockOfYourOwnLeavesNoOrphanWhenAWaitersSessionExpires(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	obs := testkit.Client(t, cl.Addrs())
	holder := slots{client: testkit.Client(t, cl.Addrs()), dir: "/own/requeue", n: 1}
	waiterClient := faultClient(t, p)
	waiter := slots{client: waiterClient, dir: "/own/requeue", n: 1}

	h, err := holder.Acquire(testkit.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	got := acquireAsync(t, waiter)
	first := testkit.WaitChildren(t, obs, "/own/requeue", 2)

	zktest.ExpireSession(t, p, waiterClient.Session().ID)
	testkit.Requeued(t, obs, "/own/requeue", first)

	require.NoError(t, h.Release())
	g := <-got
	require.NoError(t, g.err)
	require.NoError(t, g.h.Release())
	testkit.WaitChildren(t, obs, "/own/requeue", 0)
}

// A driver that chooses to wait on a node that is not ahead of ours (it
// would wait for ever) ends Enter with ErrInvalidArgument, and its node
// does not stay; a Request without a driver sends nothing.
func TestEnterRefusesADriverThatWatchesNothingAhead(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	blocker, err := slots{client: c, dir: "/own/bad", n: 1}.Acquire(testkit.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	self := engine.DriverFunc(func(_ []string, ours int) engine.Decision { return engine.Decision{Watch: ours} })
	_, err = engine.Enter(testkit.Ctx(t, 10*time.Second), engine.Request{Client: c, Dir: "/own/bad", Name: "slot-", Driver: self})
	require.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	testkit.WaitChildren(t, c, "/own/bad", 1)

	_, err = engine.Enter(testkit.Ctx(t, 10*time.Second), engine.Request{Client: c, Dir: "/own/bad", Name: "slot-"})
	require.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	require.NoError(t, blocker.Release())
}
