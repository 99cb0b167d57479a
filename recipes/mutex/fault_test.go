package mutex_test

import (
	"context"
	"errors"
	"sync"
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

type granted struct {
	hold    *hold.Hold
	at      time.Time
	err     error
	release func() error // runs Release on the goroutine that holds
}

// acquireAsync acquires on a goroutine of its own, which keeps the hold: a
// hold belongs to the goroutine that took it, so release goes through it.
func acquireAsync(m *mutex.Mutex, timeout time.Duration) <-chan granted {
	out := make(chan granted, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		h, err := m.Acquire(ctx)
		req := make(chan chan error)
		out <- granted{h, time.Now(), err, func() error { r := make(chan error); req <- r; return <-r }}
		if err == nil {
			r := <-req
			r <- m.Release()
		}
	}()
	return out
}

// The holder's link goes dead. Its loss signal must fire before anyone else
// is granted, nobody is granted while its session lives, and the next waiter
// gets the lock once the server has expired that session.
func TestHolderCutOffLearnsFirstAndNextWaiterGetsLockAfterExpiry(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	holderClient := newClient(t, p.Addrs())
	holder := newMutex(t, holderClient, "/locks/cut")
	waiter := newMutex(t, newClient(t, cl.Addrs()), "/locks/cut")
	obs := newClient(t, cl.Addrs())

	h, err := holder.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	holderSession := h.SessionID()
	got := acquireAsync(waiter, 60*time.Second)
	waitNodes(t, obs, "/locks/cut", 2)

	var lostAt time.Time
	lostc := make(chan struct{})
	go func() { <-h.Done(); lostAt = time.Now(); close(lostc) }()
	p.Blackhole()

	g := <-got
	require.NoError(t, g.err)
	assert.False(t, cl.SessionAlive(holderSession), "granted while the holder's session was alive")
	<-lostc
	assert.True(t, lostAt.Before(g.at), "holder learned at %v, waiter granted at %v", lostAt, g.at)
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSuspended)
	assert.Greater(t, g.hold.Token(), h.Token())

	// The old holder cleans up locally and can use the Mutex again once its
	// link is back.
	p.Heal()
	assert.ErrorIs(t, holder.Release(), zkrecipes.ErrHoldLost)
	_, held := holder.Held()
	assert.False(t, held)
	require.NoError(t, g.release())
	h2, err := holder.Acquire(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	assert.Greater(t, h2.Token(), g.hold.Token())
	require.NoError(t, holder.Release())
}

func TestSessionOnlyPolicySignalsOnLostNotSuspended(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	m := newMutex(t, c, "/locks/session-only")
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	sess := c.Session()

	p.Blackhole()
	<-sess.Suspended
	select {
	case <-h.Done():
		t.Fatal("fired on Suspended under the session-only policy")
	default:
	}
	<-h.Done()
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSessionLost)
	p.Heal()
	assert.ErrorIs(t, m.Release(), zkrecipes.ErrHoldLost)
}

func TestKilledHolderProcessIsReplacedWithinSessionTimeout(t *testing.T) {
	cl := zktest.Standalone(t)
	const sessionTimeout = 2 * time.Second
	holder := startHolder(t, cl.Addrs(), "/locks/kill", sessionTimeout)
	waiter := newMutex(t, newClient(t, cl.Addrs()), "/locks/kill")
	obs := newClient(t, cl.Addrs())
	got := acquireAsync(waiter, 60*time.Second)
	waitNodes(t, obs, "/locks/kill", 2)

	killed := time.Now()
	require.NoError(t, holder.Process.Kill())
	g := <-got
	require.NoError(t, g.err)
	assert.LessOrEqual(t, g.at.Sub(killed), sessionTimeout+time.Second)
	require.NoError(t, g.release())
	waitNodes(t, obs, "/locks/kill", 0)
}

func TestWaiterWhoseSessionExpiresQueuesAgainAndLeavesNoOrphan(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newMutex(t, newClient(t, cl.Addrs()), "/locks/requeue")
	p := cl.NewProxy()
	waiterClient := newClient(t, p.Addrs())
	waiter := newMutex(t, waiterClient, "/locks/requeue")

	_, err := holder.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	got := acquireAsync(waiter, 90*time.Second)
	first := waitNodes(t, obs, "/locks/requeue", 2)

	zktest.ExpireSession(t, p, waiterClient.Session().ID)
	// The waiter's first node went with its session; it queues again with a
	// new one.
	testkit.Requeued(t, obs, "/locks/requeue", first)

	require.NoError(t, holder.Release())
	g := <-got
	require.NoError(t, g.err)
	require.NoError(t, g.release())
	waitNodes(t, obs, "/locks/requeue", 0)
}

func TestDroppedCreateReplyLeavesExactlyOneNode(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	_, err := obs.Create(ctxT(t, 10*time.Second), "/locks/drop", nil, framework.WithParents())
	require.NoError(t, err)
	p := cl.NewProxy()
	m := newMutex(t, newClient(t, p.Addrs()), "/locks/drop")

	p.DropReplies()
	got := acquireAsync(m, 60*time.Second)
	waitNodes(t, obs, "/locks/drop", 1) // applied, answer lost
	p.Heal()
	g := <-got
	require.NoError(t, g.err)
	kids := nodes(t, obs, "/locks/drop")
	require.Len(t, kids, 1, "exactly one node for this contender")
	assert.Equal(t, "/locks/drop/"+kids[0], g.hold.Path())
	require.NoError(t, g.release())
}

// Contenders on a 3-node ensemble while its leader is killed: no two trusted
// holds overlap, and acquisitions resume under the new leader. Its
// clients reconnect with watches set, where go-zookeeper v1.0.4 races.
func TestEnsembleLeaderLossKeepsExclusionAndProgressWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t)
	cl := zktest.Ensemble(t, 3)
	const contenders = 4
	var inside atomic.Int32
	var overlaps, total atomic.Int64
	var afterKill atomic.Int64
	var killed atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < contenders; i++ {
		m := newMutex(t, newClient(t, cl.Addrs()), "/locks/ensemble")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				h, err := m.Acquire(ctxT(t, 60*time.Second))
				if err != nil {
					continue
				}
				if h.Err() == nil {
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					time.Sleep(2 * time.Millisecond)
					inside.Add(-1)
					total.Add(1)
					if killed.Load() {
						afterKill.Add(1)
					}
				}
				if err := m.Release(); err != nil && !errors.Is(err, zkrecipes.ErrHoldLost) && !errors.Is(err, zkrecipes.ErrDeferred) {
					t.Errorf("release: %v", err)
				}
			}
		}()
	}
	require.Eventually(t, func() bool { return total.Load() >= 20 }, 60*time.Second, 10*time.Millisecond)
	cl.Leader(10 * time.Second).Kill()
	killed.Store(true)
	require.Eventually(t, func() bool { return afterKill.Load() >= 20 }, 60*time.Second, 10*time.Millisecond,
		"no progress after the leader died")
	close(stop)
	wg.Wait()
	assert.Zero(t, overlaps.Load())
}

// The server restarts under a holder and a waiter. The holder is told at
// once; sessions survive a restart (ZooKeeper restores them from its log),
// so the holder's node still stands afterwards and nobody may be granted
// until it releases; then the queue moves on and no node is left.
func TestServerRestartKeepsExclusionAndLeavesNoNode(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	// Sessions longer than a restart can take on a loaded machine: with the
	// default 4 s, a slow JVM start would turn this into a session-loss test.
	long := framework.WithSessionTimeout(15 * time.Second)
	holder := newMutex(t, newClient(t, cl.Addrs(), long), "/locks/restart")
	waiter := newMutex(t, newClient(t, cl.Addrs(), long), "/locks/restart")
	h, err := holder.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	got := acquireAsync(waiter, 90*time.Second)
	waitNodes(t, obs, "/locks/restart", 2)

	cl.Server(1).Restart()
	<-h.Done()
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSuspended)
	kids := waitNodes(t, obs, "/locks/restart", 2) // both sessions came back
	assert.Contains(t, kids, framework.Base(h.Path()), "the holder's node survived the restart")
	select {
	case g := <-got:
		t.Fatalf("granted (err %v) while the holder's node stands", g.err)
	default:
	}

	assert.ErrorIs(t, holder.Release(), zkrecipes.ErrHoldLost)
	g := <-got
	require.NoError(t, g.err)
	assert.Greater(t, g.hold.Token(), h.Token())
	require.NoError(t, g.release())
	waitNodes(t, obs, "/locks/restart", 0)
}
