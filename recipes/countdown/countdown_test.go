package countdown_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
)

func TestTrySetCountSetsOnceAndLaterSettersAdoptTheFirstCount(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	a := setLatch(t, c, "/latches/set-once", 3)

	b := newLatch(t, newClient(t, cl.Addrs()), "/latches/set-once", 7)
	ok, err := b.TrySetCount(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.False(t, ok, "a second setter must not reset the latch")
	for _, l := range []*countdown.Countdown{a, b} {
		n, err := l.Count(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		assert.Equal(t, 3, n, "the first setter's count stands")
	}
	assert.Equal(t, 3, rawCount(t, c, "/latches/set-once"), "the node holds the remaining count, 4-byte big-endian")
}

func TestCountDownCountsOnceEachUntilZeroThenIsANoOp(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := setLatch(t, c, "/latches/down", 2)
	ctx := ctxT(t, 30*time.Second)

	ok, err := l.CountDown(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	n, err := l.Count(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Empty(t, countDowns(t, c, "/latches/down"), "a counted call leaves no cd- child")

	ok, err = l.CountDown(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	n, err = l.Count(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n)

	ok, err = l.CountDown(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "a count-down of an open latch is a no-op")
}

func TestTheLastCountDownDeletesTheLatchAndItsChildren(t *testing.T) {
	cl := zktest.Standalone(t, zktest.WithContainerCheck(100*time.Millisecond))
	c := newClient(t, cl.Addrs())
	l := setLatch(t, c, "/latches/gone/l", 3)
	for range 3 {
		ok, err := l.CountDown(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		require.True(t, ok)
	}
	assert.False(t, exists(t, c, "/latches/gone/l"), "the latch is deleted at zero")
	// Its parents were made as containers: the server reaps them.
	require.Eventually(t, func() bool { return !exists(t, c, "/latches/gone") }, 30*time.Second, 50*time.Millisecond,
		"the latch's parent container stays")
}

func TestAFinishedLatchLeftBehindIsDeletedByTheNextCaller(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := setLatch(t, c, "/latches/leftover", 1)
	// A finisher that died before deleting: the count is zero, the nodes stay.
	require.NoError(t, countDownWithoutFinishing(t, c, "/latches/leftover"))
	require.True(t, exists(t, c, "/latches/leftover"))

	ok, err := l.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.False(t, ok, "the latch is open: nothing to count")
	assert.False(t, exists(t, c, "/latches/leftover"), "the caller that found it at zero deleted it")

	// A setter finds a finished latch left behind, deletes it and sets its own.
	setLatch(t, c, "/latches/leftover", 1)
	require.NoError(t, countDownWithoutFinishing(t, c, "/latches/leftover"))
	ok, err = newLatch(t, c, "/latches/leftover", 5).TrySetCount(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.True(t, ok, "a finished latch does not keep a new one from being set")
	assert.Equal(t, 5, rawCount(t, c, "/latches/leftover"))
	assert.Empty(t, countDowns(t, c, "/latches/leftover"), "the finished latch's count-downs went with it")
}

func TestConcurrentCountDownsCountExactlyTheCountAndNoMore(t *testing.T) {
	cl := zktest.Standalone(t)
	const count, callers = 5, 12
	c := newClient(t, cl.Addrs())
	setLatch(t, c, "/latches/race", count)
	ctx := ctxT(t, 60*time.Second)
	var counted, noops atomic.Int32
	var wg sync.WaitGroup
	for range callers {
		l := newLatch(t, newClient(t, cl.Addrs()), "/latches/race", 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := l.CountDown(ctx)
			assert.NoError(t, err)
			if ok {
				counted.Add(1)
			} else {
				noops.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, count, counted.Load(), "calls that report counting")
	assert.EqualValues(t, callers-count, noops.Load(), "calls beyond zero are no-ops")
	// The callers before the last deleted their cd- children while it
	// deleted the latch's.
	assert.False(t, exists(t, c, "/latches/race"), "the latch is deleted at zero")
}

// A handle remembers the latch it counted on, to count without listing;
// once that latch is finished and another is set at the path, the handle
// counts on the new one, once.
func TestAHandleCountsOnTheNextLatchAtItsPath(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	const path = "/latches/next"
	l := setLatch(t, c, path, 1)
	ok, err := l.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, exists(t, c, path), "the first latch is finished")

	setLatch(t, newClient(t, cl.Addrs()), path, 3)
	ok, err = l.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, 2, rawCount(t, c, path), "counted once on the new latch")
	assert.Empty(t, countDowns(t, c, path))
}

func TestWaitWakesOnTheLastCountDownFromAnotherProcess(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := setLatch(t, c, "/latches/wake", 2)
	got := waitAsync(ctxT(t, 30*time.Second), l)
	inProcess(t, cl.Addrs(), "/latches/wake", "down", 1, "counted 1")
	stillWaiting(t, got, absenceWindow)
	inProcess(t, cl.Addrs(), "/latches/wake", "down", 1, "counted 1")
	require.NoError(t, receive(t, got, 10*time.Second))
}

func TestTheLatchOutlivesTheProcessThatSetIt(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	setter := inProcess(t, cl.Addrs(), "/latches/outlive", "set", 2, "set true")
	require.NoError(t, setter.Process.Kill())
	_ = setter.Wait()
	l := newLatch(t, c, "/latches/outlive", 0)
	n, err := l.Count(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

func TestWaitReturnsAtOnceWithoutALatch(t *testing.T) {
	cl := zktest.Standalone(t)
	l := newLatch(t, newClient(t, cl.Addrs()), "/latches/none", 0)
	require.NoError(t, l.Wait(ctxT(t, 5*time.Second)), "a missing latch is open (Redisson)")
	n, err := l.Count(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	ok, err := l.CountDown(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestACountOfZeroStoresNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := newLatch(t, c, "/latches/zero", 0)
	ok, err := l.TrySetCount(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	assert.True(t, ok, "no unfinished latch there")
	assert.False(t, exists(t, c, "/latches/zero"), "an open latch is an absent one")
	require.NoError(t, l.Wait(ctxT(t, 5*time.Second)))

	setLatch(t, c, "/latches/zero", 1)
	ok, err = l.TrySetCount(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	assert.False(t, ok, "an unfinished latch is there")
}

func TestACountDownMadeOnOneLatchNeverCountsOnTheNextAtThatPath(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	setLatch(t, c, "/latches/gen", 1)
	// A count-down whose multi names the first latch's gen- child...
	stale := staleCountDown(t, c, "/latches/gen")
	l := newLatch(t, c, "/latches/gen", 0)
	ok, err := l.CountDown(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	setLatch(t, c, "/latches/gen", 2)
	// ...sent after the latch finished and another was set, fails.
	require.Error(t, stale())
	assert.Equal(t, 2, rawCount(t, c, "/latches/gen"))
	assert.Empty(t, countDowns(t, c, "/latches/gen"))
}
