package framework_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/goid"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/retry"
)

func TestRuntimeChecksNameTheRecipeAndPath(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	r := framework.NewRuntime(c, "widget", "/w")
	var nilCtx context.Context

	require.NoError(t, r.Check(testCtx(t)))
	err := r.Ready(testCtx(t))
	require.ErrorIs(t, err, zkrecipes.ErrNotStarted)
	assert.Equal(t, "widget /w: not started", err.Error())
	require.ErrorIs(t, r.Check(nilCtx), zkrecipes.ErrNilContext)
	require.ErrorIs(t, r.Start(nilCtx, func(context.Context) error { return nil }), zkrecipes.ErrNilContext)
	// The background helpers take a nil context as ended: no panic, no step.
	r.Loop(nilCtx, func(context.Context) error { t.Error("Loop ran a step on a nil context"); return nil })
	assert.False(t, r.Retry(nilCtx, r.Pacer(), errors.New("x")), "Retry on a nil context")
	c.RecipeMeter("widget", "/w").Acquire(nilCtx, time.Now(), nil)

	require.NoError(t, r.Start(testCtx(t), func(context.Context) error { return nil }))
	require.NoError(t, r.Ready(testCtx(t)))
	err = r.Start(testCtx(t), func(context.Context) error { return nil })
	require.ErrorIs(t, err, zkrecipes.ErrStarted)
	assert.Equal(t, "widget /w: already started", err.Error())

	require.NoError(t, r.Close(nil))
	for _, err := range []error{r.Check(testCtx(t)), r.Ready(testCtx(t))} {
		require.ErrorIs(t, err, zkrecipes.ErrClosed)
		assert.Equal(t, "widget /w: closed", err.Error())
	}
	assert.False(t, r.Go(func(context.Context) {}), "nothing runs after Close")

	err = framework.Invalid("widget", "Widget", "NewWidget")
	require.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	assert.Equal(t, "widget: invalid argument: a nil or zero Widget: make one with NewWidget", err.Error())
}

func TestRuntimeOnAClosedClientIsClosed(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	r := framework.NewRuntime(c, "widget", "/w")
	require.NoError(t, c.Close())
	require.ErrorIs(t, r.Check(testCtx(t)), zkrecipes.ErrClosed)
	ran := false
	err := r.Start(testCtx(t), func(context.Context) error { ran = true; return nil })
	require.ErrorIs(t, err, zkrecipes.ErrClosed)
	assert.False(t, ran, "a Start on a closed client runs nothing")
}

// A Start that fails ends the background work it started and waits for
// it, and Start may be called again.
func TestRuntimeFailedStartUndoesItself(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	r := framework.NewRuntime(c, "widget", "/w")
	var running atomic.Int32
	boom := errors.New("boom")
	err := r.Start(testCtx(t), func(context.Context) error {
		require.True(t, r.Go(func(life context.Context) {
			running.Add(1)
			defer running.Add(-1)
			<-life.Done()
		}))
		return boom
	})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, "widget /w: boom", err.Error())
	assert.Zero(t, running.Load(), "the failed start's work ended before Start returned")
	require.ErrorIs(t, r.Ready(testCtx(t)), zkrecipes.ErrNotStarted)

	require.NoError(t, r.Start(testCtx(t), func(context.Context) error { return nil }), "Start may be called again")
	require.NoError(t, r.Close(nil))
}

// Start waits for the recipe to join, for ctx, or for Close, whichever
// comes first.
func TestRuntimeStartEndsWithItsContextOrClose(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	r := framework.NewRuntime(c, "widget", "/w")
	never := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	err := r.Start(ctx, never)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// begin's words about the ended ctx say which step it was on: kept.
	ctx, cancel = context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	err = r.Start(ctx, func(ctx context.Context) error {
		<-ctx.Done()
		return fmt.Errorf("waiting for the other owner's node: %w", ctx.Err())
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "widget /w: waiting for the other owner's node: context deadline exceeded", err.Error())

	begun, started := make(chan struct{}), make(chan error, 1)
	go func() {
		started <- r.Start(testCtx(t), func(ctx context.Context) error { close(begun); return never(ctx) })
	}()
	<-begun
	closed := make(chan error, 1)
	go func() { closed <- r.Close(nil) }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Close waited for a Start that waits on nothing")
	}
	require.ErrorIs(t, <-started, zkrecipes.ErrClosed, "a Start that Close ended says closed")
}

// Close ends the background work and waits for it; a second Close returns
// nil at once; release runs once, bounded by the release timeout.
func TestRuntimeCloseWaitsForTheWorkAndReleasesOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs(), framework.WithReleaseTimeout(200*time.Millisecond))
	r := framework.NewRuntime(c, "widget", "/w")
	var ended atomic.Bool
	require.True(t, r.Go(func(life context.Context) { <-life.Done(); ended.Store(true) }))
	releases := 0
	err := r.Close(func(ctx context.Context) error {
		releases++
		<-ctx.Done()
		return ctx.Err()
	})
	require.ErrorIs(t, err, context.DeadlineExceeded, "the release is bounded by the release timeout")
	assert.Contains(t, err.Error(), "widget /w: ")
	assert.True(t, ended.Load(), "Close waited for the background work")
	require.NoError(t, r.Close(func(context.Context) error { releases++; return nil }))
	assert.Equal(t, 1, releases)
}

// Within checks as Check does, and its context ends with the caller's, at
// the recipe's Close (before release runs), or at the client's Close; a
// recipe's Close leaves the calls of another recipe on the client alone.
func TestRuntimeWithinEndsWithCtxCloseOrClient(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	var nilCtx context.Context
	r := framework.NewRuntime(c, "widget", "/w")
	_, _, err := r.Within(nilCtx)
	require.ErrorIs(t, err, zkrecipes.ErrNilContext)
	assert.Equal(t, "widget /w: invalid argument: nil context", err.Error())

	parent, cancelParent := context.WithCancel(testCtx(t))
	ctx, cancel, err := r.Within(parent)
	require.NoError(t, err)
	cancelParent()
	<-ctx.Done()
	cancel()

	other := framework.NewRuntime(c, "gadget", "/g")
	octx, ocancel, err := other.Within(testCtx(t))
	require.NoError(t, err)
	defer ocancel()
	for range 100 { // ended calls are pruned, not kept
		_, done, err := r.Within(testCtx(t))
		require.NoError(t, err)
		done()
	}
	ctx, cancel, err = r.Within(testCtx(t))
	require.NoError(t, err)
	defer cancel()
	require.NoError(t, r.Close(func(context.Context) error {
		assert.Error(t, ctx.Err(), "release ran before the call in progress ended")
		return nil
	}))
	require.ErrorIs(t, ctx.Err(), context.Canceled)
	assert.NoError(t, octx.Err(), "another recipe's call ended")
	_, _, err = r.Within(testCtx(t))
	require.ErrorIs(t, err, zkrecipes.ErrClosed)
	assert.Equal(t, "widget /w: closed", err.Error())

	require.NoError(t, c.Close())
	<-octx.Done() // the client's Close ends it
	_, _, err = other.Within(testCtx(t))
	require.ErrorIs(t, err, zkrecipes.ErrClosed)
}

// The client's Close ends a recipe's background work too.
func TestRuntimeWorkEndsWithTheClient(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	r := framework.NewRuntime(c, "widget", "/w")
	done := make(chan struct{})
	require.True(t, r.Go(func(life context.Context) { <-life.Done(); close(done) }))
	require.NoError(t, c.Close())
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("the work outlived the client")
	}
	require.NoError(t, r.Close(nil))
}

// Loop retries a failing step under the runtime's policy and starts the
// pauses over after a step that succeeds.
func TestRuntimeLoopRetriesUnderThePolicy(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	r := framework.NewRuntime(c, "widget", "/w").WithPolicy(retry.NTimes(1, time.Millisecond))
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var steps int
	r.Loop(ctx, func(ctx context.Context) error {
		steps++
		if steps == 5 {
			cancel()
			return nil
		}
		return errors.New("not yet")
	})
	assert.Equal(t, 5, steps)
}

// Each task of Go runs on a goroutine of its own, never one that ran other
// work: per-goroutine ownership (a reentrant lock's) cannot pass from a
// task that forgot to release to the next one.
func TestRuntimeGoNeverReusesAGoroutine(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	r := framework.NewRuntime(c, "widget", "/w")
	t.Cleanup(func() { _ = r.Close(nil) })
	seen := map[int64]bool{}
	for i := 0; i < 5; i++ {
		id := make(chan int64, 1)
		require.True(t, r.Go(func(context.Context) { id <- goid.Current() }))
		g := <-id
		require.False(t, seen[g], "task %d ran on goroutine %d, which ran an earlier task", i, g)
		seen[g] = true
		// The goroutine ends with its task; a pool's would wait for the
		// next task in the client's worker loop.
		require.Eventually(t, func() bool {
			st := goroutineStack(g)
			return st == "" || strings.Contains(st, "framework.(*Client).work(")
		}, waitFor, time.Millisecond)
		require.Empty(t, goroutineStack(g), "the goroutine of task %d waits for more work", i)
	}
}

// goroutineStack is goroutine g's stack from the runtime's dump of every
// goroutine, or "" if g has ended.
func goroutineStack(g int64) string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, st := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.HasPrefix(st, []byte(fmt.Sprintf("goroutine %d [", g))) {
			return string(st)
		}
	}
	return ""
}
