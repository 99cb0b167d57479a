package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// tracker checks the semaphore's promise from inside the process: a lease
// counts as trusted from its grant until its Done fires, and trusted leases
// never number more than the maximum. A holder's Done fires when its link
// drops, before the server can expire its session and grant its lease to
// another, so every grant finds the Done of a lease it replaces closed.
type tracker struct {
	max int

	mu         sync.Mutex
	live       map[*hold.Hold]struct{}
	total      int
	peak       int
	violations []string
}

func newTracker(max int) *tracker {
	return &tracker{max: max, live: map[*hold.Hold]struct{}{}}
}

func (tr *tracker) granted(ls []*hold.Hold) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for l := range tr.live {
		select {
		case <-l.Done():
			delete(tr.live, l)
		default:
		}
	}
	for _, l := range ls {
		if l.Err() == nil { // a lease lost at once was never trusted
			tr.live[l] = struct{}{}
		}
	}
	tr.total += len(ls)
	tr.peak = max(tr.peak, len(tr.live))
	if len(tr.live) > tr.max {
		var paths []string
		for l := range tr.live {
			paths = append(paths, fmt.Sprintf("%s (session 0x%x)", l.Path(), l.SessionID()))
		}
		tr.violations = append(tr.violations, fmt.Sprintf("%d trusted leases at %s: %v", len(tr.live), time.Now().Format("15:04:05.000"), paths))
	}
}

func (tr *tracker) grants() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.total
}

func (tr *tracker) check(t testing.TB) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	assert.Empty(t, tr.violations, "more trusted leases than the maximum of %d", tr.max)
	t.Logf("%d grants, at most %d trusted leases at once (max %d)", tr.total, tr.peak, tr.max)
}

// loop takes and returns one lease at a time until stop, reporting grants to
// tr. Failed acquires (timeouts during faults) are simply tried again.
func loop(s *semaphore.Semaphore, tr *tracker, stop <-chan struct{}, timeout time.Duration) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		ls, err := s.Acquire(ctx, 1)
		cancel()
		if errors.Is(err, zkrecipes.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		tr.granted(ls)
		time.Sleep(2 * time.Millisecond) // the protected work
		for _, l := range ls {
			_ = l.Release()
		}
	}
}

// A holder's link goes dead. Its lease's loss signal fires before anyone can
// take the lease, nobody does while its session lives, and the waiter gets it
// once the server has expired that session.
func TestBlackholedHolderLearnsBeforeAnotherExceedsMax(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	p := cl.NewProxy()
	a := newSem(t, newClient(t, p.Addrs()), "/sem/blackhole", 2)
	b := newSem(t, newClient(t, cl.Addrs()), "/sem/blackhole", 2)
	c := newSem(t, newClient(t, cl.Addrs()), "/sem/blackhole", 2)
	tr := newTracker(2)

	la, err := a.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	tr.granted(la)
	lb, err := b.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	tr.granted(lb)
	got := acquireAsync(ctxT(t, 60*time.Second), c, 1)
	waitNodes(t, obs, "/sem/blackhole/leases", 3)

	var lostAt time.Time
	lostc := make(chan struct{})
	go func() { <-la[0].Done(); lostAt = time.Now(); close(lostc) }()
	p.Blackhole()

	g := receive(t, got, 60*time.Second)
	require.NoError(t, g.err)
	tr.granted(g.leases)
	assert.False(t, cl.SessionAlive(la[0].SessionID()), "granted while the holder's session was alive")
	<-lostc
	assert.True(t, lostAt.Before(g.at), "holder learned at %v, waiter granted at %v", lostAt, g.at)
	assert.ErrorIs(t, la[0].Err(), zkrecipes.ErrSuspended)
	assert.Nil(t, lb[0].Err(), "the other holder is untouched")
	tr.check(t)

	p.Heal()
	assert.ErrorIs(t, la[0].Release(), zkrecipes.ErrHoldLost)
	closeAll(t, append(lb, g.leases...))
	waitNodes(t, obs, "/sem/blackhole/leases", 0)
}

func TestKilledHolderProcessFreesItsLeaseWithinSessionTimeout(t *testing.T) {
	cl := zktest.Standalone(t)
	const sessionTimeout = 2 * time.Second
	holder := startHolder(t, cl.Addrs(), "/sem/kill", 1, sessionTimeout)
	waiter := newSem(t, newClient(t, cl.Addrs()), "/sem/kill", 1)
	obs := newClient(t, cl.Addrs())
	got := acquireAsync(ctxT(t, 60*time.Second), waiter, 1)
	waitNodes(t, obs, "/sem/kill/leases", 2)

	killed := time.Now()
	require.NoError(t, holder.Process.Kill())
	g := receive(t, got, 30*time.Second)
	require.NoError(t, g.err)
	assert.LessOrEqual(t, g.at.Sub(killed), sessionTimeout+time.Second)
	closeAll(t, g.leases)
	waitNodes(t, obs, "/sem/kill/leases", 0)
}

// Many sessions take turns while links are cut and whole sessions expire:
// trusted leases never outnumber the maximum, and work goes on.
func TestManySessionsWithCutsAndExpiriesNeverExceedMax(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const max, contenders = 2, 5
	cr := startCrowd(t, cl, "/sem/chaos", max, contenders, 3*time.Second)
	for round := range 2 {
		for range 3 {
			cr.proxies[rand.IntN(contenders)].Cut()
			time.Sleep(100 * time.Millisecond) // chaos pacing, not synchronisation
		}
		victim := (round*2 + 1) % contenders
		sess, err := cr.clients[victim].WaitConnected(ctxT(t, 30*time.Second))
		require.NoError(t, err)
		zktest.ExpireSession(t, cr.proxies[victim], sess.ID)
	}
	cr.progresses(t, 20)
	cr.halt()
	cr.tr.check(t)
	cr.leavesNothing(t, obs, "/sem/chaos")
}

// crowd is a set of contenders, each with its own client behind its own
// proxy, taking turns on one semaphore until halt.
type crowd struct {
	tr      *tracker
	clients []*framework.Client
	proxies []*zktest.Proxy
	halt    func()
}

// startCrowd starts n contenders on the semaphore at path (each ask waits
// up to timeout) and waits for the first ten grants.
func startCrowd(t *testing.T, cl *zktest.Cluster, path string, max, n int, timeout time.Duration) *crowd {
	t.Helper()
	cr := &crowd{tr: newTracker(max)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		p := cl.NewProxy()
		c := newClient(t, p.Addrs())
		cr.clients, cr.proxies = append(cr.clients, c), append(cr.proxies, p)
		s := newSem(t, c, path, max)
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(s, cr.tr, stop, timeout)
		}()
	}
	// Registered after the clients' cleanups, so it runs before them.
	cr.halt = sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(cr.halt)
	require.Eventually(t, func() bool { return cr.tr.grants() >= 10 }, 60*time.Second, 10*time.Millisecond)
	return cr
}

// progresses waits for more grants after the faults.
func (cr *crowd) progresses(t *testing.T, more int) {
	t.Helper()
	before := cr.tr.grants()
	require.Eventually(t, func() bool { return cr.tr.grants() >= before+more }, 60*time.Second, 10*time.Millisecond,
		"no progress after the faults")
}

// leavesNothing: once every client's background deletes are done, no lease
// or lock node is left under path.
func (cr *crowd) leavesNothing(t *testing.T, obs *framework.Client, path string) {
	t.Helper()
	for _, c := range cr.clients {
		require.NoError(t, c.Drain(ctxT(t, 30*time.Second)))
	}
	waitNodes(t, obs, path+"/leases", 0)
	waitNodes(t, obs, path+"/locks", 0)
}

// The server restarts under a lease holder and a waiter (which holds the
// internal lock while it waits for room). The holder is told at once;
// sessions survive a restart, so its lease still counts afterwards and the
// waiter may not get one until it is closed; then no node is left.
func TestServerRestartKeepsLeasesAndLeavesNoNode(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	// Sessions longer than a restart can take on a loaded machine.
	long := framework.WithSessionTimeout(15 * time.Second)
	holder := newSem(t, newClient(t, cl.Addrs(), long), "/sem/restart", 1)
	waiter := newSem(t, newClient(t, cl.Addrs(), long), "/sem/restart", 1)
	h, err := holder.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	got := acquireAsync(ctxT(t, 90*time.Second), waiter, 1)
	waitNodes(t, obs, "/sem/restart/leases", 2)
	waitNodes(t, obs, "/sem/restart/locks", 1)

	cl.Server(1).Restart()
	<-h[0].Done()
	assert.ErrorIs(t, h[0].Err(), zkrecipes.ErrSuspended)
	kids := waitNodes(t, obs, "/sem/restart/leases", 2) // both sessions came back
	assert.Contains(t, kids, framework.Base(h[0].Path()), "the holder's lease survived the restart")
	notGranted(t, got)

	assert.ErrorIs(t, h[0].Release(), zkrecipes.ErrHoldLost)
	g := receive(t, got, 30*time.Second)
	require.NoError(t, g.err)
	assert.Greater(t, g.leases[0].Token(), h[0].Token())
	closeAll(t, g.leases)
	waitNodes(t, obs, "/sem/restart/leases", 0)
	waitNodes(t, obs, "/sem/restart/locks", 0)
}
