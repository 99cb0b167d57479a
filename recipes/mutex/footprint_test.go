package mutex_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A parked waiter costs its own goroutine and a few KiB, not a copy of the
// queue: before, each kept the listing it queued with, N names for N
// waiters, about 60 KiB each at a thousand and growing with the queue.
func TestQueuedWaitersKeepNoListingAndNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	holder := newMutex(t, newClient(t, cl.Addrs()), "/deep")
	_, err := holder.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	m := newMutex(t, c, "/deep")

	const n = 1000
	g0, heap0 := footprint()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Acquire(ctx); err == nil {
				_ = m.Release()
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	waitNodes(t, c, "/deep", n+1)
	// Each request in flight has a goroutine: a still count for a while is
	// every waiter parked on its watch.
	deadline := time.Now().Add(60 * time.Second)
	last, still := runtime.NumGoroutine(), 0
	for still < 10 {
		require.True(t, time.Now().Before(deadline), "the waiters never settled")
		time.Sleep(100 * time.Millisecond) // sampling the goroutine count
		if g := runtime.NumGoroutine(); g != last {
			last, still = g, 0
		} else {
			still++
		}
	}
	g1, heap1 := footprint()
	perWaiter := (heap1 - heap0) / n
	t.Logf("per waiter: %d goroutines, %d heap bytes", (g1-g0+n/2)/n, perWaiter)
	assert.LessOrEqual(t, g1-g0, n+10, "goroutines beyond the waiters' own")
	assert.Less(t, perWaiter, int64(16<<10), "heap per waiter")
}

func footprint() (int, int64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), int64(ms.HeapAlloc)
}

// An uncontended acquire and release costs the server three requests, as
// go-zookeeper's zk.Lock does: the create, the listing pipelined with it,
// and the delete. The hold still learns of its node's deletion (rule 9):
// the listing's child watch stands for the node's own watch until the
// directory changes, and only then is the node's own watch set. (Before:
// four, the fourth being that watch, set at every grant.)
func TestUncontendedAcquireAndReleaseCostThreeRequests(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	m := newMutex(t, c, "/footprint/requests")
	// The first acquire makes the directory.
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, h.Release())

	const n = 30
	before := cl.Received(c.Session().ID)
	require.Positive(t, before)
	for range n {
		h, err := m.Acquire(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		// A critical section long enough for a watch set at the grant to
		// go out (a hold released at once never sends it).
		time.Sleep(5 * time.Millisecond)
		require.NoError(t, h.Release())
	}
	// The releases' deletes are only sent: one more look, answered after
	// them, makes sure the server has counted them.
	_, _, err = c.Exists(ctxT(t, 10*time.Second), "/footprint/requests")
	require.NoError(t, err)
	got := cl.Received(c.Session().ID) - before - 1
	t.Logf("%d requests for %d acquire+release", got, n)
	// A ping or two may fall in the loop.
	assert.LessOrEqual(t, got, 3*n+2, "requests for %d acquire+release", n)
}

// The first acquire of a lock whose directory is missing, under parents that
// exist, makes only that directory: a lock per entity (a job, an account)
// meets a missing directory at each cold entity, since the server reaps
// empty lock directories (containers). Directories are made from the
// bottom up; made from the root down, each existing ancestor cost a failed
// create, a write the server orders, in sequence.
func TestFirstAcquireMakesOnlyTheMissingDirectory(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, err := c.Create(ctxT(t, 10*time.Second), "/tenants/a/jobs/daily", nil, framework.WithParents())
	require.NoError(t, err)
	m := newMutex(t, c, "/tenants/a/jobs/daily/job-42")

	before := cl.Received(c.Session().ID)
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, h.Release())
	_, _, err = c.Exists(ctxT(t, 10*time.Second), "/tenants")
	require.NoError(t, err)
	got := cl.Received(c.Session().ID) - before - 1
	t.Logf("%d requests for the first acquire+release", got)
	// The create and its listing (both fail: no directory), the directory,
	// the create again and its listing, the delete; a ping may fall in.
	assert.LessOrEqual(t, got, 7, "requests for the first acquire+release")
}

// An uncontended hold nobody waits on costs no goroutine: a service
// holding a lock per entity holds many at once and mostly never looks at
// a hold's end. Once the holder waits on it (Done), it costs one (its loss
// signal and its directory's change) until its directory changes.
func TestAnUncontendedHoldCostsNoGoroutineUntilWaitedOn(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	const n = 200
	g0, _ := footprint()
	holds := make([]*hold.Hold, 0, n)
	for i := range n {
		m := newMutex(t, c, fmt.Sprintf("/footprint/entity-%d", i))
		h, err := m.Acquire(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		holds = append(holds, h)
	}
	// Each request in flight has a goroutine: wait until they are done.
	var g1 int
	require.Eventually(t, func() bool {
		g1, _ = footprint()
		return g1-g0 <= 10
	}, 30*time.Second, 50*time.Millisecond, "goroutines for %d holds nobody waits on", n)
	t.Logf("%d holds nobody waits on: %d goroutines", n, g1-g0)
	for _, h := range holds {
		select {
		case <-h.Done():
			t.Fatal("a hold ended")
		default:
		}
	}
	require.Eventually(t, func() bool {
		g1, _ = footprint()
		return g1-g0 >= n && g1-g0 <= n+10
	}, 30*time.Second, 50*time.Millisecond, "goroutines for %d holds waited on", n)
	t.Logf("%d holds waited on: %d goroutines", n, g1-g0)
	for _, h := range holds {
		require.NoError(t, h.Release())
	}
}
