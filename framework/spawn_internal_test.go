package framework

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/internal/goid"
)

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

// run spawns f on c and waits for it.
func run(t *testing.T, c *Client, f func()) {
	t.Helper()
	done := make(chan struct{})
	require.True(t, c.spawn(func() { defer close(done); f() }))
	<-done
}

// A task spawned after another has finished runs on the same goroutine,
// whose stack has already grown: a new goroutine per request copied its
// stack as it grew, about six times per lock operation under contention.
func TestSpawnRunsTheNextTaskOnAnIdleWorker(t *testing.T) {
	c := dialForSpawn(t)
	var first, second int64
	run(t, c, func() { first = goid.Current() })
	require.Eventually(t, func() bool { return c.idleWorkers.Load() > 0 }, 10*time.Second, time.Millisecond)
	run(t, c, func() { second = goid.Current() })
	require.Equal(t, first, second)
}

// After a burst, at most maxIdleWorkers wait for more; the rest end: ten
// thousand waiters' creates must not leave ten thousand goroutines behind.
func TestSpawnKeepsAtMostMaxIdleWorkersAfterABurst(t *testing.T) {
	c := dialForSpawn(t)
	before := workers()
	const burst = 3 * maxIdleWorkers
	release := make(chan struct{})
	var started, ended sync.WaitGroup
	for range burst {
		started.Add(1)
		ended.Add(1)
		require.True(t, c.spawn(func() { started.Done(); <-release; ended.Done() }))
	}
	started.Wait()
	require.GreaterOrEqual(t, workers(), before+burst)
	close(release)
	ended.Wait()
	require.Eventually(t, func() bool { return workers() <= before+maxIdleWorkers }, 10*time.Second, time.Millisecond)
	require.LessOrEqual(t, int(c.idleWorkers.Load()), maxIdleWorkers)
}

// An idle worker ends once it has waited workerIdle for a task.
func TestSpawnIdleWorkersEndAfterTheIdleTime(t *testing.T) {
	testWorkerIdle.Store(int64(50 * time.Millisecond))
	defer testWorkerIdle.Store(0)
	c := dialForSpawn(t)
	release := make(chan struct{})
	var ended sync.WaitGroup
	for range 8 {
		ended.Add(1)
		require.True(t, c.spawn(func() { <-release; ended.Done() }))
	}
	close(release)
	ended.Wait()
	// The client's own background work may take a worker now and then;
	// none of the eight stays.
	require.Eventually(t, func() bool { return c.idleWorkers.Load() == 0 }, 10*time.Second, time.Millisecond)
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
	require.True(t, c.spawn(func() { close(busy); <-release }))
	<-busy
	// The busy task ends once Close has begun, and Close waits for it.
	go func() { <-c.quit; close(release) }()
	require.NoError(t, c.Close())
	require.Equal(t, before, workers(), "workers left after Close")
	ran := false
	require.False(t, c.spawn(func() { ran = true }))
	require.False(t, ran)
}
