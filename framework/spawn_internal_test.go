package framework

import (
	"bytes"
	"context"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/goid"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// idleWorkers is how many of c's workers wait for a task.
func (c *Client) idleWorkers() int {
	c.spawnMu.Lock()
	defer c.spawnMu.Unlock()
	return len(c.idle)
}

// workers counts the goroutines running or waiting in c's worker loop.
func workers() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "framework.(*Client).work(")
}

func dialForSpawn(t *testing.T) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, zktest.MainAddrs())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// burst runs n tasks on c at once, calls whileBusy (if not nil) while all
// of them run, and returns when all have ended: n workers, idle from then
// on.
func burst(t *testing.T, c *Client, n int, whileBusy func()) {
	t.Helper()
	release := make(chan struct{})
	var started, ended sync.WaitGroup
	for range n {
		started.Add(1)
		ended.Add(1)
		require.True(t, c.Go(func() { started.Done(); <-release; ended.Done() }))
	}
	started.Wait()
	if whileBusy != nil {
		whileBusy()
	}
	close(release)
	ended.Wait()
}

// run spawns f on c and waits for it.
func run(t *testing.T, c *Client, f func()) {
	t.Helper()
	done := make(chan struct{})
	require.True(t, c.Go(func() { defer close(done); f() }))
	<-done
}

// A task spawned after another has finished runs on the same goroutine,
// whose stack has already grown: a new goroutine per request copied its
// stack as it grew, about six times per lock operation under contention.
func TestSpawnRunsTheNextTaskOnAnIdleWorker(t *testing.T) {
	c := dialForSpawn(t)
	var first, second int64
	run(t, c, func() { first = goid.Current() })
	require.Eventually(t, func() bool { return c.idleWorkers() > 0 }, 10*time.Second, time.Millisecond)
	run(t, c, func() { second = goid.Current() })
	require.Equal(t, first, second)
}

// After a burst, at most maxIdleWorkers wait for more; the rest end: ten
// thousand waiters' creates must not leave ten thousand goroutines behind.
func TestSpawnKeepsAtMostMaxIdleWorkersAfterABurst(t *testing.T) {
	c := dialForSpawn(t)
	before := workers()
	const n = 3 * maxIdleWorkers
	burst(t, c, n, func() { require.GreaterOrEqual(t, workers(), before+n) })
	require.Eventually(t, func() bool { return workers() <= before+maxIdleWorkers }, 10*time.Second, time.Millisecond)
	require.LessOrEqual(t, c.idleWorkers(), maxIdleWorkers)
}

// An idle worker ends once it has waited workerIdle for a task (between
// one and two of them: see work).
func TestSpawnIdleWorkersEndAfterTheIdleTime(t *testing.T) {
	c := dialForSpawn(t)
	burst(t, c, 8, nil)
	// The client's own background work may take a worker now and then;
	// none of the eight stays.
	require.Eventually(t, func() bool { return c.idleWorkers() == 0 }, 10*time.Second, time.Millisecond)
}

// Close ends every worker, idle or busy, before it returns, and spawn
// refuses work from then on.
func TestCloseEndsEveryWorker(t *testing.T) {
	before := workers()
	c := dialForSpawn(t)
	release := make(chan struct{})
	for range 4 {
		run(t, c, func() {})
	}
	busy := make(chan struct{})
	require.True(t, c.Go(func() { close(busy); <-release }))
	<-busy
	// The busy task ends once Close has begun, and Close waits for it.
	go func() { <-c.quit; close(release) }()
	require.NoError(t, c.Close())
	require.Equal(t, before, workers(), "workers left after Close")
	ran := false
	require.False(t, c.Go(func() { ran = true }))
	require.False(t, ran)
}

// Under a light steady load after a burst, the burst's workers end: the
// load keeps reusing the most recently idle worker. Handed out in turn, a
// task every few milliseconds kept all 64 alive (an adversarial review).
func TestSpawnLightLoadAfterABurstKeepsFewWorkers(t *testing.T) {
	c := dialForSpawn(t)
	burst(t, c, maxIdleWorkers, nil)
	require.Eventually(t, func() bool { return c.idleWorkers() == maxIdleWorkers }, 10*time.Second, time.Millisecond)
	// One task at a time, back to back: far more than one task per worker
	// per idle period, had they been handed out in turn.
	deadline := time.Now().Add(10 * time.Second)
	for c.idleWorkers() > 2 {
		require.True(t, time.Now().Before(deadline), "idle workers under a one-at-a-time load: %d", c.idleWorkers())
		run(t, c, func() {})
	}
}

// labelsOf returns the profiler labels of the goroutine parked in
// parkedForLabels, from the goroutine profile.
func labelsOf(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&buf, 1))
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(rec, "parkedForLabels") {
			for _, l := range strings.Split(rec, "\n") {
				if strings.HasPrefix(l, "# labels:") {
					return l
				}
			}
			return "# labels: none"
		}
	}
	t.Fatal("no goroutine parked in parkedForLabels")
	return ""
}

//go:noinline
func parkedForLabels(started chan<- struct{}, park <-chan struct{}) {
	close(started)
	<-park
}

// A request runs with its caller's profiler labels, as a goroutine of its
// own did, never with the labels of whoever used the worker before: a
// worker lent one tenant's labels to another's work (an adversarial
// review).
func TestSpawnedRequestCarriesItsCallersProfilerLabels(t *testing.T) {
	c := dialForSpawn(t)
	ctx := context.Background()
	// A worker made by, and first used for, tenant a.
	pprof.Do(ctx, pprof.Labels("tenant", "a"), func(ctx context.Context) {
		cctx, cancel := handedOff(c, ctx) // a deadline sooner than the session timeout: the call is spawned
		defer cancel()
		_, err := callValue(c, cctx, func() (int, error) { return 0, nil })
		require.NoError(t, err)
	})
	require.Eventually(t, func() bool { return c.idleWorkers() > 0 }, 10*time.Second, time.Millisecond)

	started, park := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go pprof.Do(ctx, pprof.Labels("tenant", "b"), func(ctx context.Context) {
		defer close(done)
		cctx, cancel := handedOff(c, ctx)
		defer cancel()
		_, _ = callValue(c, cctx, func() (int, error) { parkedForLabels(started, park); return 0, nil })
	})
	<-started
	got := labelsOf(t)
	close(park)
	<-done
	require.Contains(t, got, `"tenant":"b"`)
	require.NotContains(t, got, `"tenant":"a"`)
	// Idle again, the worker shows no caller's labels.
	require.Eventually(t, func() bool { return c.idleWorkers() > 0 }, 10*time.Second, time.Millisecond)
	var prof bytes.Buffer
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&prof, 1))
	for _, rec := range strings.Split(prof.String(), "\n\n") {
		if strings.Contains(rec, "framework.(*Client).work") {
			require.NotContains(t, rec, "tenant", "an idle worker's labels")
		}
	}

	// Work of the client's own (no caller context) carries no labels.
	started, park = make(chan struct{}), make(chan struct{})
	pprof.Do(ctx, pprof.Labels("tenant", "c"), func(context.Context) {
		require.True(t, c.Go(func() { parkedForLabels(started, park) }))
	})
	<-started
	got = labelsOf(t)
	close(park)
	require.NotContains(t, got, "tenant")
}

// handedOff is ctx with a deadline: a call under it is handed to a worker
// (see inlineSafe), not run inline.
func handedOff(c *Client, ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.Session().Timeout/2)
}

// A call on a link that is up, under a context that can be cancelled but
// has no deadline, runs on its caller's goroutine: no hand-off. One with a
// deadline, however far, is handed to a worker, so that it returns the
// moment the deadline passes even if go-zookeeper holds the request
// longer (a request queued as the link dies waits for the reconnect).
func TestCallRunsInlineOnlyWithoutADeadline(t *testing.T) {
	c := dialForSpawn(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	me := goid.Current()
	on, err := callValue(c, ctx, func() (int64, error) { return goid.Current(), nil })
	require.NoError(t, err)
	require.Equal(t, me, on, "a call with no deadline was handed off")

	far, cancelFar := context.WithTimeout(ctx, 2*c.Session().Timeout)
	defer cancelFar()
	on, err = callValue(c, far, func() (int64, error) { return goid.Current(), nil })
	require.NoError(t, err)
	require.NotEqual(t, me, on, "a call with a deadline past the session timeout ran inline")

	near, cancelNear := handedOff(c, ctx)
	defer cancelNear()
	on, err = callValue(c, near, func() (int64, error) { return goid.Current(), nil })
	require.NoError(t, err)
	require.NotEqual(t, me, on, "a call whose deadline is near ran inline")

	marked, cancelMarked := context.WithCancel(HandOff(ctx))
	defer cancelMarked()
	on, err = callValue(c, marked, func() (int64, error) { return goid.Current(), nil })
	require.NoError(t, err)
	require.NotEqual(t, me, on, "a call under a context derived from HandOff's ran inline")
}

// A context cancelled while an inline call is in flight is what the
// caller gets once the call returns, not the call's result: the same
// outcome as a call abandoned by a handed-off caller.
func TestInlineCallCancelledInFlightReportsTheContext(t *testing.T) {
	c := dialForSpawn(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := callValue(c, ctx, func() (int, error) { cancel(); return 1, nil })
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, v)
}
