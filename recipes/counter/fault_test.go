package counter_test

// Faults between a try's read and its write, against a real server: the
// write is sent at most once, so a lost reply is zkrecipes.ErrOutcomeUnknown and
// never a second increment (Curator resends it, then re-reads and adds
// again), and every increment that returned success is in the node.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/internal/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/retry"
)

// once returns a hook that runs f the first time only.
func once(f func(h *hold.Hold)) func(h *hold.Hold) {
	var o sync.Once
	return func(h *hold.Hold) { o.Do(func() { f(h) }) }
}

func TestLostReplyIsOutcomeUnknownAndTheIncrementIsAppliedOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	require.NoError(t, newLong(t, obs, "/counters/lost").Set(ctxT(t, 10*time.Second), 10))
	l := newLong(t, c, "/counters/lost", counter.WithOptimisticRetry(retry.NTimes(5, 0)))
	counter.BeforeWrite(l, once(func(*hold.Hold) { p.DropReplies() }))

	type out struct {
		r   counter.Result[int64]
		err error
	}
	got := make(chan out, 1)
	go func() {
		r, err := l.Increment(ctxT(t, 30*time.Second))
		got <- out{r, err}
	}()
	require.Eventually(t, func() bool { return rawLong(t, obs, "/counters/lost") == 11 },
		10*time.Second, 10*time.Millisecond, "the server did not apply the increment")
	p.Heal()
	o := <-got
	require.ErrorIs(t, o.err, zkrecipes.ErrOutcomeUnknown)
	assert.False(t, o.r.Succeeded)
	assert.Equal(t, int64(10), o.r.PreValue, "the value read")
	assert.Equal(t, int64(11), o.r.PostValue, "the value it may have written")
	assert.Equal(t, int64(11), rawLong(t, obs, "/counters/lost"), "applied exactly once")

	r, err := l.Increment(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, int64(12), r.PostValue)
}

// One way: the write never reaches the server, and the client cannot know
// it: zkrecipes.ErrOutcomeUnknown, and nothing is applied later either.
func TestDroppedRequestIsOutcomeUnknownAndNeverAppliedLater(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	require.NoError(t, newLong(t, obs, "/counters/oneway").Set(ctxT(t, 10*time.Second), 5))
	l := newLong(t, c, "/counters/oneway")
	counter.BeforeWrite(l, once(func(*hold.Hold) { p.DropRequests() }))
	r, err := l.Increment(ctxT(t, 30*time.Second))
	require.ErrorIs(t, err, zkrecipes.ErrOutcomeUnknown)
	assert.Equal(t, int64(5), r.PreValue)
	p.Heal()
	// The client reconnects; a resent write would land now.
	r, err = l.Get(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	assert.Equal(t, int64(5), r.PostValue)
	r, err = l.Increment(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, int64(6), r.PostValue, "the dropped write was never sent again")
}

// invariant runs n increments of l, each with fault before its write, and
// checks that the node holds every increment that succeeded, at most one
// more per unknown outcome, and never more.
func invariant(t *testing.T, obs, l *counter.Long, n int, fault func(i int), heal func()) {
	t.Helper()
	start, err := obs.Get(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	var i int
	counter.BeforeWrite(l, func(*hold.Hold) { fault(i) })
	succeeded, unknown := 0, 0
	for i = range n {
		r, err := l.Increment(ctxT(t, 60*time.Second))
		heal()
		switch {
		case err == nil:
			require.True(t, r.Succeeded)
			succeeded++
		case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
			unknown++
		default:
			require.NoError(t, err, "increment %d", i)
		}
	}
	counter.BeforeWrite(l, nil)
	end, err := obs.Get(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	added := int(end.PostValue - start.PostValue)
	t.Logf("%d succeeded, %d unknown, %d added", succeeded, unknown, added)
	assert.GreaterOrEqual(t, added, succeeded, "an increment that succeeded is missing")
	assert.LessOrEqual(t, added, succeeded+unknown, "an increment was applied twice")
}

func TestCutBothWaysNeverDoublesOrLosesAnIncrement(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newLong(t, newClient(t, cl.Addrs()), "/counters/cut")
	l := newLong(t, c, "/counters/cut")
	invariant(t, obs, l, 8, func(i int) {
		if i%2 == 0 {
			p.Cut()
		}
	}, func() {})
}

func TestServerRestartNeverDoublesOrLosesAnIncrement(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := newLong(t, c, "/counters/restart")
	require.NoError(t, l.Set(ctxT(t, 10*time.Second), 0))
	obs := newLong(t, c, "/counters/restart")
	var wg sync.WaitGroup
	invariant(t, obs, l, 3, func(int) {
		cl.Server(1).Stop()
		wg.Add(1)
		go func() { defer wg.Done(); cl.Server(1).Start() }()
	}, wg.Wait)
}

// The session expires between the read and the write: the counter is a
// persistent node, so the new session carries on; the write either landed
// or is reported unknown.
func TestSessionExpiryNeverDoublesOrLosesAnIncrement(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newLong(t, newClient(t, cl.Addrs()), "/counters/expiry")
	l := newLong(t, c, "/counters/expiry")
	invariant(t, obs, l, 2, func(i int) {
		if i == 0 {
			testkit.LoseSession(t, p, c)
		}
	}, func() {})
	r, err := l.Increment(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.True(t, r.Succeeded, "works on the new session")
}

// Someone deletes the node between the read and the write: the set finds
// no node, and the next try starts again from a missing node (0), as
// Curator's.
func TestNodeDeletedByAnotherBetweenReadAndWriteStartsFromZero(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	obs := newClient(t, cl.Addrs())
	l := newLong(t, c, "/counters/deleted")
	require.NoError(t, l.Set(ctxT(t, 10*time.Second), 41))
	counter.BeforeWrite(l, once(func(*hold.Hold) {
		require.NoError(t, obs.Delete(ctxT(t, 10*time.Second), "/counters/deleted", -1))
	}))
	r, err := l.Increment(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.True(t, r.Succeeded)
	assert.Equal(t, 2, r.Stats.OptimisticTries)
	assert.Equal(t, int64(0), r.PreValue)
	assert.Equal(t, int64(1), r.PostValue)
	assert.Equal(t, int64(1), rawLong(t, obs, "/counters/deleted"))

	counter.BeforeWrite(l, once(func(*hold.Hold) {
		require.NoError(t, obs.Delete(ctxT(t, 10*time.Second), "/counters/deleted", -1))
	}))
	cas, err := l.CompareAndSet(ctxT(t, 10*time.Second), 1, 2)
	require.NoError(t, err)
	assert.False(t, cas.Succeeded, "the node it compared with is gone")
	_, ok := raw(t, obs, "/counters/deleted")
	assert.False(t, ok, "a compare-and-set from 1 does not make the node again")
}

// promotedLong is a Long whose optimistic try always loses (a rival write
// lands between its read and its write), so that it goes to the lock.
func promotedLong(t *testing.T, c, rival *counter.Long, during func(h *hold.Hold)) {
	t.Helper()
	counter.BeforeWrite(c, func(h *hold.Hold) {
		if h == nil {
			_, err := rival.Increment(ctxT(t, 10*time.Second))
			require.NoError(t, err)
			return
		}
		during(h)
	})
}

// The promoted lock's node is deleted by someone else between the read
// and the fenced write: nothing is written, and the error says the hold
// was lost.
func TestPromotedWriteAfterTheLockNodeWasDeletedIsRefused(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	obs := newClient(t, cl.Addrs())
	rival := newLong(t, obs, "/counters/pl")
	l := newLong(t, c, "/counters/pl", counter.WithOptimisticRetry(retry.NTimes(0, 0)),
		counter.WithPromotedToLock("/counters/pl-lock", 10*time.Second, retry.NTimes(3, 0)))
	promotedLong(t, l, rival, func(h *hold.Hold) {
		require.NoError(t, obs.Delete(ctxT(t, 10*time.Second), h.Path(), -1))
	})
	r, err := l.Increment(ctxT(t, 10*time.Second))
	require.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrNodeDeleted)
	assert.False(t, r.Succeeded)
	assert.Equal(t, 1, r.Stats.PromotedTries)
	assert.Equal(t, int64(1), rawLong(t, obs, "/counters/pl"), "only the rival's increment")
	testkit.WaitChildren(t, obs, "/counters/pl-lock", 0)
}

// The session expires while the counter holds the promoted lock: the
// fenced write cannot commit.
func TestPromotedWriteAfterSessionExpiryIsRefused(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	rival := newLong(t, obs, "/counters/pe")
	l := newLong(t, c, "/counters/pe", counter.WithOptimisticRetry(retry.NTimes(0, 0)),
		counter.WithPromotedToLock("/counters/pe-lock", 10*time.Second, retry.NTimes(3, 0)))
	promotedLong(t, l, rival, func(*hold.Hold) { testkit.LoseSession(t, p, c) })
	r, err := l.Increment(ctxT(t, 30*time.Second))
	require.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.False(t, r.Succeeded)
	assert.Equal(t, int64(1), rawLong(t, obs, "/counters/pe"), "only the rival's increment")
	testkit.WaitChildren(t, obs, "/counters/pe-lock", 0)
}

// A lost reply under the promoted lock is unknown too, and applied once.
func TestPromotedLostReplyIsOutcomeUnknownAndAppliedOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	rival := newLong(t, obs, "/counters/pr")
	l := newLong(t, c, "/counters/pr", counter.WithOptimisticRetry(retry.NTimes(0, 0)),
		counter.WithPromotedToLock("/counters/pr-lock", 10*time.Second, retry.NTimes(3, 0)))
	promotedLong(t, l, rival, func(*hold.Hold) { p.DropReplies() })
	got := make(chan error, 1)
	go func() {
		_, err := l.Increment(ctxT(t, 30*time.Second))
		got <- err
	}()
	require.Eventually(t, func() bool {
		data, ok := raw(t, obs, "/counters/pr")
		return ok && len(data) == 8 && data[7] == 2
	},
		10*time.Second, 10*time.Millisecond, "the server did not apply the increment")
	p.Heal()
	require.ErrorIs(t, <-got, zkrecipes.ErrOutcomeUnknown)
	assert.Equal(t, int64(2), rawLong(t, obs, "/counters/pr"), "the rival's and ours, once")
}

// Cancelling the caller's context between tries ends the operation with
// the context's error.
func TestContextEndingBetweenTriesStops(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	rival := newLong(t, newClient(t, cl.Addrs()), "/counters/ctx")
	l := newLong(t, c, "/counters/ctx", counter.WithOptimisticRetry(retry.Forever(10*time.Millisecond)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counter.BeforeWrite(l, func(*hold.Hold) {
		_, err := rival.Increment(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		cancel()
	})
	_, err := l.Increment(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}

// The link is cut while the counter holds the promoted lock: the write
// either commits under the hold, or is refused because the hold is in
// doubt, or its outcome is unknown; it never lands twice.
func TestPromotedWriteAcrossACutLandsAtMostOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	rival := newLong(t, obs, "/counters/pc")
	l := newLong(t, c, "/counters/pc", counter.WithOptimisticRetry(retry.NTimes(0, 0)),
		counter.WithPromotedToLock("/counters/pc-lock", 10*time.Second, retry.NTimes(3, 0)))
	promotedLong(t, l, rival, once(func(*hold.Hold) { p.Cut() }))
	r, err := l.Increment(ctxT(t, 30*time.Second))
	got := rawLong(t, obs, "/counters/pc")
	switch {
	case err == nil:
		assert.True(t, r.Succeeded)
		assert.Equal(t, int64(2), got, "the rival's and ours")
	case errors.Is(err, zkrecipes.ErrHoldLost):
		assert.Equal(t, int64(1), got, "refused: only the rival's")
	case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
		assert.Contains(t, []int64{1, 2}, got)
	default:
		t.Fatalf("unexpected error: %v", err)
	}
	t.Logf("err %v, counter %d", err, got)
	testkit.WaitChildren(t, obs, "/counters/pc-lock", 0)
}
