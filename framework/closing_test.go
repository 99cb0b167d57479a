package framework_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// CloseAfter refuses new calls first (Check, Within, Start say
// zkrecipes.ErrClosed), then runs the drain while the background work
// still runs and may still be started, then ends that work and waits for
// it, then runs the release: the order a recipe needs to let its tasks
// pass their last words on before they end.
func TestRuntimeCloseAfterDrainsWhileTheWorkStillRuns(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	r := framework.NewRuntime(c, "widget", "/w")
	var steps []string
	var ended atomic.Bool
	task := make(chan string)
	require.True(t, r.Go(func(life context.Context) {
		for {
			select {
			case s := <-task:
				steps = append(steps, s)
			case <-life.Done():
				ended.Store(true)
				return
			}
		}
	}))
	err := r.CloseAfter(func(ctx context.Context) error {
		assert.True(t, r.Closed(), "closed before the drain")
		require.ErrorIs(t, r.Check(ctx), zkrecipes.ErrClosed)
		_, _, err := r.Within(ctx)
		require.ErrorIs(t, err, zkrecipes.ErrClosed)
		require.ErrorIs(t, r.Start(ctx, func(context.Context) error { return nil }), zkrecipes.ErrClosed)
		assert.False(t, ended.Load(), "the work ended before the drain")
		select {
		case task <- "drained": // the task still runs
		case <-ctx.Done():
			t.Error("the task did not take the drain's word")
		}
		last := make(chan struct{})
		assert.True(t, r.Go(func(context.Context) { close(last) }), "the drain may start work")
		<-last
		return nil
	}, func(context.Context) error {
		assert.True(t, ended.Load(), "the release runs once the work has ended")
		steps = append(steps, "released")
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"drained", "released"}, steps)
	assert.False(t, r.Go(func(context.Context) {}), "nothing runs after Close")
	require.NoError(t, r.CloseAfter(func(context.Context) error { t.Error("a second drain"); return nil }, nil))
}

// The drain's error and the release's are both returned, named; the drain
// is bounded by the client's release timeout.
func TestRuntimeCloseAfterReturnsTheDrainsError(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs(), framework.WithReleaseTimeout(200*time.Millisecond))
	r := framework.NewRuntime(c, "widget", "/w")
	boom := errors.New("boom")
	err := r.CloseAfter(func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}, func(context.Context) error { return boom })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "widget /w: ")
}

// A Start under way when CloseAfter comes sees its context end, and the
// drain runs after it has returned: never beside a begin.
func TestRuntimeCloseAfterEndsAStartFirst(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	r := framework.NewRuntime(c, "widget", "/w")
	began := make(chan struct{})
	var returned atomic.Bool
	started := make(chan error, 1)
	go func() {
		started <- r.Start(testCtx(t), func(ctx context.Context) error {
			close(began)
			<-ctx.Done()
			returned.Store(true)
			return ctx.Err()
		})
	}()
	<-began
	require.NoError(t, r.CloseAfter(func(context.Context) error {
		assert.True(t, returned.Load(), "the drain ran beside a Start")
		return nil
	}, nil))
	require.ErrorIs(t, <-started, zkrecipes.ErrClosed)
}

// A Close called from one of the recipe's own tasks returns at once
// instead of waiting for its caller; the release runs once that task has
// returned, and a second Close is a no-op.
func TestRuntimeCloseFromItsOwnTaskReturns(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	r := framework.NewRuntime(c, "widget", "/w")
	var taskDone atomic.Bool
	released := make(chan bool, 1)
	closed := make(chan error, 1)
	require.True(t, r.Go(func(life context.Context) {
		closed <- r.Close(func(context.Context) error {
			released <- taskDone.Load()
			return nil
		})
		<-life.Done() // the Close ends the caller's context too
		taskDone.Store(true)
	}))
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("a Close called from the recipe's own task never returned")
	}
	require.True(t, r.Closed())
	select {
	case after := <-released:
		assert.True(t, after, "the release ran before the calling task returned")
	case <-time.After(15 * time.Second):
		t.Fatal("the release never ran")
	}
	require.NoError(t, r.Close(nil))
}
