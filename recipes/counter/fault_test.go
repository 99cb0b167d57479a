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
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/retry"
)

func TestLostReplyIsOutcomeUnknownAndTheIncrementIsAppliedOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	require.NoError(t, newLong(t, obs, "/counters/lost").Set(ctxT(t, 10*time.Second), 10))
	l := newLong(t, c, "/counters/lost", counter.WithOptimisticRetry(retry.NTimes(5, 0)))
	p.DropRepliesFrom(zktest.OpMulti) // the increment's write: its read goes through

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
	p.DropRequestsFrom(zktest.OpMulti) // the increment's write: its read goes through
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

// invariant runs n increments of l, whose client is behind p, and checks
// that the node holds every increment that succeeded, at most one more per
// unknown outcome, and never more. The write of increment i, if faulty(i),
// is held at the proxy while fault runs, then let go; heal runs after each
// increment returns.
func invariant(t *testing.T, p *zktest.Proxy, obs, l *counter.Long, n int, faulty func(i int) bool, fault, heal func()) {
	t.Helper()
	begin, err := obs.Get(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	succeeded, unknown := 0, 0
	for i := range n {
		var r counter.Result[int64]
		var err error
		increment := func() { r, err = l.Increment(ctxT(t, 60*time.Second)) }
		if faulty(i) {
			betweenReadAndWrite(t, p, increment, fault)
		} else {
			increment()
		}
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
	end, err := obs.Get(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	added := int(end.PostValue - begin.PostValue)
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
	invariant(t, p, obs, l, 8, func(i int) bool { return i%2 == 0 }, p.Cut, func() {})
}

func TestServerRestartNeverDoublesOrLosesAnIncrement(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	l := newLong(t, c, "/counters/restart")
	require.NoError(t, l.Set(ctxT(t, 10*time.Second), 0))
	obs := newLong(t, newClient(t, cl.Addrs()), "/counters/restart")
	var wg sync.WaitGroup
	invariant(t, p, obs, l, 3, func(int) bool { return true }, func() {
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
	invariant(t, p, obs, l, 2, func(i int) bool { return i == 0 }, func() { testkit.LoseSession(t, p, c) }, func() {})
	r, err := l.Increment(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.True(t, r.Succeeded, "works on the new session")
}

// Someone deletes the node between the read and the write: the set finds
// no node, and the next try starts again from a missing node (0), as
// Curator's.
func TestNodeDeletedByAnotherBetweenReadAndWriteStartsFromZero(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	l := newLong(t, c, "/counters/deleted")
	require.NoError(t, l.Set(ctxT(t, 10*time.Second), 41))
	del := func() { require.NoError(t, obs.Delete(ctxT(t, 10*time.Second), "/counters/deleted", -1)) }
	var r counter.Result[int64]
	var err error
	betweenReadAndWrite(t, p, func() { r, err = l.Increment(ctxT(t, 10*time.Second)) }, del)
	require.NoError(t, err)
	assert.True(t, r.Succeeded)
	assert.Equal(t, 2, r.Stats.OptimisticTries)
	assert.Equal(t, int64(0), r.PreValue)
	assert.Equal(t, int64(1), r.PostValue)
	assert.Equal(t, int64(1), rawLong(t, obs, "/counters/deleted"))

	var cas counter.Result[int64]
	betweenReadAndWrite(t, p, func() { cas, err = l.CompareAndSet(ctxT(t, 10*time.Second), 1, 2) }, del)
	require.NoError(t, err)
	assert.False(t, cas.Succeeded, "the node it compared with is gone")
	_, ok := raw(t, obs, "/counters/deleted")
	assert.False(t, ok, "a compare-and-set from 1 does not make the node again")
}

// promote starts call, an operation of a counter whose client is behind p
// and which tries once without the lock, and makes that try lose: a rival
// increment lands while its write is held at the proxy. arm, run before
// the write goes on, arms p for what follows: the next write is the
// promoted try's, fenced by the lock. The channel closes when call
// returns.
func promote(t *testing.T, p *zktest.Proxy, rival *counter.Long, call, arm func()) <-chan struct{} {
	t.Helper()
	p.StallRequestsFrom(zktest.OpMulti)
	t.Cleanup(p.Release)
	done := start(call)
	waitHeld(t, p, done)
	_, err := rival.Increment(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	arm()
	p.Release()
	return done
}

// The promoted lock's node is deleted by someone else between the read
// and the fenced write: nothing is written, and the error says the hold
// was lost.
func TestPromotedWriteAfterTheLockNodeWasDeletedIsRefused(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	rival := newLong(t, obs, "/counters/pl")
	l := newLong(t, c, "/counters/pl", counter.WithOptimisticRetry(retry.NTimes(0, 0)),
		counter.WithPromotedToLock("/counters/pl-lock", 10*time.Second, retry.NTimes(3, 0)))
	var r counter.Result[int64]
	var err error
	done := promote(t, p, rival, func() { r, err = l.Increment(ctxT(t, 10*time.Second)) },
		func() { p.StallRequestsFrom(zktest.OpMulti) })
	waitHeld(t, p, done)
	lock := testkit.WaitChildren(t, obs, "/counters/pl-lock", 1)
	require.NoError(t, obs.Delete(ctxT(t, 10*time.Second), "/counters/pl-lock/"+lock[0], -1))
	p.Release()
	finished(t, done)
	require.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrNodeDeleted)
	assert.False(t, r.Succeeded)
	assert.Equal(t, 1, r.Stats.PromotedTries)
	assert.Equal(t, int64(1), rawLong(t, obs, "/counters/pl"), "only the rival's increment")
	testkit.WaitChildren(t, obs, "/counters/pl-lock", 0)
}

// The session expires while the counter holds the promoted lock: the
// fenced write cannot commit. The proxy holds the promoted try's read (the
// first read after the optimistic try's write: taking an uncontended lock
// reads no node's data) while the session ends.
func TestPromotedWriteAfterSessionExpiryIsRefused(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	rival := newLong(t, obs, "/counters/pe")
	l := newLong(t, c, "/counters/pe", counter.WithOptimisticRetry(retry.NTimes(0, 0)),
		counter.WithPromotedToLock("/counters/pe-lock", 10*time.Second, retry.NTimes(3, 0)))
	var r counter.Result[int64]
	var err error
	done := promote(t, p, rival, func() { r, err = l.Increment(ctxT(t, 30*time.Second)) },
		func() { p.StallRequestsFrom(zktest.OpGetData) })
	waitHeld(t, p, done)
	testkit.WaitChildren(t, obs, "/counters/pe-lock", 1) // held: the lock is taken
	testkit.LoseSession(t, p, c)
	p.Release()
	finished(t, done)
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
	var err error
	done := promote(t, p, rival, func() { _, err = l.Increment(ctxT(t, 30*time.Second)) },
		func() { p.DropRepliesFrom(zktest.OpMulti) })
	require.Eventually(t, func() bool {
		data, ok := raw(t, obs, "/counters/pr")
		return ok && len(data) == 8 && data[7] == 2
	},
		10*time.Second, 10*time.Millisecond, "the server did not apply the increment")
	p.Heal()
	finished(t, done)
	require.ErrorIs(t, err, zkrecipes.ErrOutcomeUnknown)
	assert.Equal(t, int64(2), rawLong(t, obs, "/counters/pr"), "the rival's and ours, once")
}

// Cancelling the caller's context between tries ends the operation with
// the context's error.
func TestContextEndingBetweenTriesStops(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	rival := newLong(t, newClient(t, cl.Addrs()), "/counters/ctx")
	// The policy is asked once the first try has lost: the operation
	// sleeps from then on.
	lost := make(chan struct{})
	var once sync.Once
	l := newLong(t, c, "/counters/ctx", counter.WithOptimisticRetry(retry.Custom(
		func(int, time.Duration) (time.Duration, bool) {
			once.Do(func() { close(lost) })
			return time.Hour, true
		})))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.StallRequestsFrom(zktest.OpMulti)
	t.Cleanup(p.Release)
	var err error
	done := start(func() { _, err = l.Increment(ctx) })
	waitHeld(t, p, done)
	_, rerr := rival.Increment(ctxT(t, 10*time.Second))
	require.NoError(t, rerr)
	p.Release()
	testkit.WaitClosed(t, lost, 30*time.Second, "the first try did not lose")
	cancel()
	finished(t, done)
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, zkrecipes.ErrOutcomeUnknown, "no write was on its way")
}

// The link is cut while the counter holds the promoted lock, its fenced
// write on its way: the write either commits under the hold, or is
// refused because the hold is in doubt, or its outcome is unknown; it
// never lands twice.
func TestPromotedWriteAcrossACutLandsAtMostOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	rival := newLong(t, obs, "/counters/pc")
	l := newLong(t, c, "/counters/pc", counter.WithOptimisticRetry(retry.NTimes(0, 0)),
		counter.WithPromotedToLock("/counters/pc-lock", 10*time.Second, retry.NTimes(3, 0)))
	var r counter.Result[int64]
	var err error
	done := promote(t, p, rival, func() { r, err = l.Increment(ctxT(t, 30*time.Second)) },
		func() { p.StallRequestsFrom(zktest.OpMulti) })
	waitHeld(t, p, done)
	p.Cut()
	p.Release()
	finished(t, done)
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
