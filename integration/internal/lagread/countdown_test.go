package lagread_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/recipes/countdown"
)

func latch(t *testing.T, e *laggingEnsemble, count int) (onLeader, onLagging *countdown.Countdown) {
	t.Helper()
	var err error
	onLeader, err = countdown.New(e.Leader, "/lag/latch", count)
	require.NoError(t, err)
	t.Cleanup(func() { _ = onLeader.Close() })
	onLagging, err = countdown.New(e.Lagging, "/lag/latch", count)
	require.NoError(t, err)
	t.Cleanup(func() { _ = onLagging.Close() })
	return onLeader, onLagging
}

// A latch set before Wait is called is closed for that Await until it is
// counted down, whichever server answers: on a follower that has not
// applied the set yet, Wait must still wait. (Wait reads the latch with
// no sync: the follower has no latch, and no latch is an open one.)
func TestCountdownAwaitOnALaggingFollowerWaitsForALatchSetBeforeIt(t *testing.T) {
	e := newLaggingEnsemble(t)
	setter, awaiter := latch(t, e, 1)
	e.Lag(t)

	set, err := setter.TrySetCount(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, set)
	err = awaiter.Wait(ctxT(t, time.Second))
	require.ErrorIs(t, err, context.DeadlineExceeded, "Wait found open a latch set before it was called, never counted down")
}

// A count-down called after the latch was set counts it: on a follower
// that has not applied the set yet, it must not report "nothing to count"
// and lose the count. (CountDown reads the latch with no sync; finding
// none, it returns false without a write.)
func TestCountDownOnALaggingFollowerCountsALatchSetBeforeIt(t *testing.T) {
	e := newLaggingEnsemble(t)
	setter, counter := latch(t, e, 2)
	e.Lag(t)

	set, err := setter.TrySetCount(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, set)
	counted, err := counter.CountDown(ctxT(t, lagging))
	require.NoError(t, err)
	assert.True(t, counted, "the count-down found no latch to count")
	n, err := setter.Count(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the count on the leader")
}

// A latch counted down to zero and finished before TrySetCount is called
// is gone for it: it sets a new latch. On a follower that has not applied
// the finish yet, it must not answer "a latch is already set". (It reads
// the latch with no sync; finding one still counting, it returns false
// without a write.)
func TestTrySetCountOnALaggingFollowerSetsALatchAfterTheLastOneFinished(t *testing.T) {
	e := newLaggingEnsemble(t)
	first, second := latch(t, e, 1)
	set, err := first.TrySetCount(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, set)
	require.Eventually(t, func() bool {
		n, err := second.Count(ctxT(t, 10*time.Second))
		return err == nil && n == 1
	}, 10*time.Second, 20*time.Millisecond, "the follower never saw the first latch")
	e.Lag(t)

	counted, err := first.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, counted)
	ok, _, err := e.Leader.Exists(ctxT(t, 10*time.Second), "/lag/latch")
	require.NoError(t, err)
	require.False(t, ok, "the finished latch is still there on the leader")

	set, err = second.TrySetCount(ctxT(t, lagging))
	require.NoError(t, err)
	assert.True(t, set, "TrySetCount saw the finished latch as still set")
}
