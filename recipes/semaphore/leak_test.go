package semaphore_test

// No lease leaks: whatever ends an acquire (cancel, timeout, a lost session, a
// lost reply), the nodes it made are deleted and the internal mutex is
// released. Curator had one bug of this kind after another (CURATOR-315,
// -335, -462); CURATOR-595 is a lease whose session the client gave up on
// while the server kept it alive.

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

func TestCancelWhileWaitingForRoomLeavesNoLeaseAndReleasesInternalMutex(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newSem(t, newClient(t, cl.Addrs()), "/sem/cancel", 1)
	waiterClient := newClient(t, cl.Addrs())
	waiter := newSem(t, waiterClient, "/sem/cancel", 1)
	h, err := holder.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := acquireAsync(ctx, waiter, 1)
	waitNodes(t, obs, "/sem/cancel/leases", 2)
	waitNodes(t, obs, "/sem/cancel/locks", 1) // the waiter holds the internal mutex
	cancel()
	a := receive(t, got, 10*time.Second)
	assert.ErrorIs(t, a.err, context.Canceled)
	require.NoError(t, waiterClient.Drain(ctxT(t, 10*time.Second)))
	assert.Equal(t, []string{framework.Base(h[0].Path())}, nodes(t, obs, "/sem/cancel/leases"))
	assert.Empty(t, nodes(t, obs, "/sem/cancel/locks"))

	// The mutex is free: the next acquirer gets in as soon as there is room.
	got = acquireAsync(ctxT(t, 30*time.Second), waiter, 1)
	waitNodes(t, obs, "/sem/cancel/leases", 2)
	require.NoError(t, h[0].Release())
	a = receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	closeAll(t, a.leases)
	waitNodes(t, obs, "/sem/cancel/leases", 0)
	waitNodes(t, obs, "/sem/cancel/locks", 0)
}

func TestTimeoutWhileQueuedForInternalMutexLeavesNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newSem(t, newClient(t, cl.Addrs()), "/sem/queued", 1)
	first := newSem(t, newClient(t, cl.Addrs()), "/sem/queued", 1)
	secondClient := newClient(t, cl.Addrs())
	second := newSem(t, secondClient, "/sem/queued", 1)
	h, err := holder.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	got := acquireAsync(ctxT(t, 30*time.Second), first, 1)
	waitNodes(t, obs, "/sem/queued/leases", 2)

	// The second waits for the internal mutex behind the first, then times out.
	_, err = second.Acquire(ctxT(t, 500*time.Millisecond), 1)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, secondClient.Drain(ctxT(t, 10*time.Second)))
	assert.Len(t, nodes(t, obs, "/sem/queued/locks"), 1, "only the first's")
	assert.Len(t, nodes(t, obs, "/sem/queued/leases"), 2, "the second made none")

	require.NoError(t, h[0].Release())
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	closeAll(t, a.leases)
	waitNodes(t, obs, "/sem/queued/locks", 0)
}

// The waiter's session expires: its nodes go with it, and it starts over
// under the new session, leaving no node of the old attempt.
func TestSessionExpiryWhileWaitingStartsOverAndLeavesNoOrphan(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newSem(t, newClient(t, cl.Addrs()), "/sem/expire", 1)
	p := cl.NewProxy()
	waiterClient := newClient(t, p.Addrs())
	waiter := newSem(t, waiterClient, "/sem/expire", 1)
	h, err := holder.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	got := acquireAsync(ctxT(t, 90*time.Second), waiter, 1)
	before := waitNodes(t, obs, "/sem/expire/leases", 2)

	zktest.ExpireSession(t, p, waiterClient.Session().ID)
	testkit.Requeued(t, obs, "/sem/expire/leases", before)
	waitNodes(t, obs, "/sem/expire/locks", 1)

	require.NoError(t, h[0].Release())
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	assert.Equal(t, waiterClient.Session().ID, a.leases[0].SessionID())
	closeAll(t, a.leases)
	waitNodes(t, obs, "/sem/expire/leases", 0)
	waitNodes(t, obs, "/sem/expire/locks", 0)
}

// An acquire that times out while its link is down cannot delete anything
// then; its nodes are gone once the server has expired the session, and the
// client's background deletes find nothing left to do.
func TestTimeoutDuringPartitionLeavesNoOrphanAfterExpiry(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newSem(t, newClient(t, cl.Addrs()), "/sem/partition", 1)
	p := cl.NewProxy()
	waiterClient := newClient(t, p.Addrs())
	waiter := newSem(t, waiterClient, "/sem/partition", 1)
	h, err := holder.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := acquireAsync(ctx, waiter, 1)
	waitNodes(t, obs, "/sem/partition/leases", 2)

	// The caller gives up during the partition, 2 s after the waiter queued
	// (a deadline set before it queued could pass first on a loaded machine).
	timer := time.AfterFunc(2*time.Second, cancel)
	defer timer.Stop()
	zktest.ExpireSession(t, p, waiterClient.Session().ID)
	a := receive(t, got, 10*time.Second)
	assert.ErrorIs(t, a.err, context.Canceled)
	require.NoError(t, waiterClient.Drain(ctxT(t, 30*time.Second)))
	assert.Equal(t, []string{framework.Base(h[0].Path())}, nodes(t, obs, "/sem/partition/leases"))
	assert.Empty(t, nodes(t, obs, "/sem/partition/locks"))
	closeAll(t, h)
}

// CURATOR-335: a network event after the lease node is created but before
// the list. Here the create's reply is lost: the protected create finds the
// node it made after the reconnect, and exactly one node stays.
func TestLostCreateReplyLeavesExactlyOneLeaseNode(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	p := cl.NewProxy()
	s := newSem(t, newClient(t, p.Addrs()), "/sem/drop", 2)
	_, err := obs.Create(ctxT(t, 10*time.Second), "/sem/drop/leases", nil, framework.WithParents())
	require.NoError(t, err)

	p.DropReplies()
	got := make(chan acquired, 1)
	go func() {
		ls, err := s.TryAcquire(ctxT(t, 60*time.Second), 1) // a try: no internal mutex first
		got <- acquired{ls, time.Now(), err}
	}()
	waitNodes(t, obs, "/sem/drop/leases", 1) // applied, answer lost
	p.Heal()
	a := receive(t, got, 60*time.Second)
	require.NoError(t, a.err)
	kids := nodes(t, obs, "/sem/drop/leases")
	require.Len(t, kids, 1, "exactly one node for this lease")
	assert.Equal(t, "/sem/drop/leases/"+kids[0], a.leases[0].Path())
	closeAll(t, a.leases)
}

// The same with replies lost while the internal mutex is being taken.
func TestLostRepliesDuringAcquireLeaveNoOrphan(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	p := cl.NewProxy()
	s := newSem(t, newClient(t, p.Addrs()), "/sem/drop-lock", 2)
	_, err := obs.Create(ctxT(t, 10*time.Second), "/sem/drop-lock/locks", nil, framework.WithParents())
	require.NoError(t, err)

	p.DropReplies()
	got := acquireAsync(ctxT(t, 60*time.Second), s, 1)
	waitNodes(t, obs, "/sem/drop-lock/locks", 1) // applied, answer lost
	p.Heal()
	a := receive(t, got, 60*time.Second)
	require.NoError(t, a.err)
	assert.Len(t, nodes(t, obs, "/sem/drop-lock/leases"), 1)
	waitNodes(t, obs, "/sem/drop-lock/locks", 0)
	closeAll(t, a.leases)
	waitNodes(t, obs, "/sem/drop-lock/leases", 0)
}

// holdSessionAliveButLost makes c declare its session Lost (simulated
// expiry) while the server keeps it alive, then lets c back: the case of
// CURATOR-595, where Curator's LOST left a lease that blocked everyone
// else. The client never resumes a session it declared lost: it comes back
// on a new one, and the old one (its nodes with it) lives on the server
// until it expires there or the recipe deletes them. It returns the old
// session's id.
//
// Dropping the server's replies does it: the client stops hearing the server
// and gives the session up after 25% of its timeout, while its reconnect
// attempts still reach the server and keep the session alive there.
func holdSessionAliveButLost(t *testing.T, cl *zktest.Cluster, p *zktest.Proxy, c *framework.Client) int64 {
	t.Helper()
	sess := c.Session()
	p.DropReplies()
	select {
	case <-sess.Lost:
	case <-time.After(30 * time.Second):
		t.Fatal("the client never gave its session up")
	}
	// (The server's session dump can miss a session while it is being
	// touched, so look twice if need be.)
	require.Eventually(t, func() bool { return cl.SessionAlive(sess.ID) }, 5*time.Second, 50*time.Millisecond,
		"the server must still hold the session")
	p.Heal()
	now, err := c.WaitConnected(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	require.NotEqual(t, sess.ID, now.ID, "a session declared lost was resumed")
	return sess.ID
}

func lostSessionClient(t *testing.T, cl *zktest.Cluster) (*framework.Client, *zktest.Proxy) {
	p := cl.NewProxy()
	return newClient(t, p.Addrs(), framework.WithSimulatedExpiry(25)), p
}

func TestLeaseGivenUpLocallyWhileServerKeepsSessionIsFreedByClose(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holderClient, p := lostSessionClient(t, cl)
	holder := newSem(t, holderClient, "/sem/595", 1)
	waiter := newSem(t, newClient(t, cl.Addrs()), "/sem/595", 1)
	h, err := holder.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	got := acquireAsync(ctxT(t, 90*time.Second), waiter, 1)
	waitNodes(t, obs, "/sem/595/leases", 2)

	sid := holdSessionAliveButLost(t, cl, p, holderClient)
	<-h[0].Done()
	assert.Error(t, h[0].Err(), "the holder was told")
	// The lease node lives on with the session the server kept, until that
	// session expires there (the client never resumes it) or Release
	// deletes it from the new session: CURATOR-595's lease, which blocked
	// everyone for good, is freed either way.
	assert.ErrorIs(t, h[0].Release(), zkrecipes.ErrHoldLost)
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	closeAll(t, a.leases)
	waitNodes(t, obs, "/sem/595/leases", 0)
	require.Eventually(t, func() bool { return !cl.SessionAlive(sid) }, 20*time.Second, 50*time.Millisecond,
		"the session declared lost ends on the server")
}

func TestWaiterGivenUpLocallyWhileServerKeepsSessionLeavesNoOrphan(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	holder := newSem(t, newClient(t, cl.Addrs()), "/sem/595w", 1)
	waiterClient, p := lostSessionClient(t, cl)
	waiter := newSem(t, waiterClient, "/sem/595w", 1)
	h, err := holder.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	got := acquireAsync(ctxT(t, 90*time.Second), waiter, 1)
	before := waitNodes(t, obs, "/sem/595w/leases", 2)

	holdSessionAliveButLost(t, cl, p, waiterClient)
	// The waiter starts over; its old lease node and internal mutex node,
	// still alive on the server, are deleted.
	testkit.Requeued(t, obs, "/sem/595w/leases", before)
	waitNodes(t, obs, "/sem/595w/locks", 1)

	require.NoError(t, h[0].Release())
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	closeAll(t, a.leases)
	waitNodes(t, obs, "/sem/595w/leases", 0)
	waitNodes(t, obs, "/sem/595w/locks", 0)
}

// CURATOR-335's own test, in spirit: acquirers loop while their links are cut
// and their replies dropped. Afterwards no node is left behind and every
// lease can still be taken.
//
// Not under the race detector: go-zookeeper v1.0.4 itself races on
// Conn.lastZxid when it reconnects with watches set (recvLoop writes it while
// sendSetWatches reads it; samuel/go-zookeeper#260, go-zookeeper/zk#35), and
// this test reconnects dozens of times with waiters watching, which trips the
// detector in a few runs out of a hundred (make test runs it without the
// detector). Our own code under faults is raced by the other fault tests.
func TestNetworkStressLeavesNoOrphanLeasesWithoutRace(t *testing.T) {
	testkit.SkipUnderRace(t)
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const max, contenders = 2, 4
	cr := startCrowd(t, cl, "/sem/stress", max, contenders, 2*time.Second)
	for round := range 20 {
		p := cr.proxies[rand.IntN(len(cr.proxies))]
		if round%2 == 0 {
			p.Cut()
		} else {
			p.DropReplies()
		}
		time.Sleep(150 * time.Millisecond) // chaos pacing, not synchronisation
		p.Heal()
	}
	cr.progresses(t, 10)
	cr.halt()
	cr.leavesNothing(t, obs, "/sem/stress")
	s := newSem(t, newClient(t, cl.Addrs()), "/sem/stress", max)
	ls, err := s.TryAcquire(ctxT(t, 10*time.Second), max)
	require.NoError(t, err, "every lease can be taken again")
	closeAll(t, ls)
	cr.tr.check(t)
}
