package countdown_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
)

type result struct {
	ok  bool
	err error
}

func countDownAsync(ctx context.Context, l *countdown.Countdown) <-chan result {
	out := make(chan result, 1)
	go func() {
		ok, err := l.CountDown(ctx)
		out <- result{ok, err}
	}()
	return out
}

// loseNextReply makes p drop every reply from the next latch write on (a
// multi: the one that sets or counts down the latch; the reads before it
// go through): the server applies the write and the client never hears of
// it.
func loseNextReply(p *zktest.Proxy) { p.DropRepliesFrom(zktest.OpMulti) }

// holdNextWrite makes p hold the next latch write, and everything sent
// after it on its link, until Release: the write is on its way and has not
// reached the server.
func holdNextWrite(t *testing.T, p *zktest.Proxy) {
	p.StallRequestsFrom(zktest.OpMulti)
	t.Cleanup(p.Release)
}

// waitHeld waits until p holds the write holdNextWrite aimed at.
func waitHeld(t *testing.T, p *zktest.Proxy) {
	t.Helper()
	require.Eventually(t, p.Stalled, 30*time.Second, time.Millisecond, "the call never sent its write")
}

// waitDisconnected waits until c has noticed that its link is dead.
func waitDisconnected(t *testing.T, c *framework.Client) {
	t.Helper()
	require.Eventually(t, func() bool { return !c.State().IsConnected() }, 30*time.Second, 10*time.Millisecond,
		"the client did not notice its dead link")
}

// The reply to a count-down is lost after the server applied it; the call
// finds its own count-down and reports it, and the latch went down once.
func TestACountDownWhoseReplyIsLostCountsExactlyOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	setLatch(t, obs, "/latches/lost-reply", 3)
	p := cl.NewProxy()
	l := newLatch(t, newClient(t, p.Addrs()), "/latches/lost-reply", 0)

	loseNextReply(p)
	got := countDownAsync(ctxT(t, 60*time.Second), l)
	require.Eventually(t, func() bool { return rawCount(t, obs, "/latches/lost-reply") == 2 }, 30*time.Second,
		10*time.Millisecond, "the server did not apply the count-down")
	p.Heal()
	r := receive(t, got, 30*time.Second)
	require.NoError(t, r.err)
	assert.True(t, r.ok, "the count-down happened: the call must say so")
	assert.Equal(t, 2, rawCount(t, obs, "/latches/lost-reply"), "counted once, not again on the resend")
	markersGone(t, obs, "/latches/lost-reply")
}

// The same, and the session expires before the client hears back: the
// count-down is persistent, and the call finds it from its new session.
func TestACountDownWhoseReplyIsLostAndWhoseSessionExpiresCountsExactlyOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	setLatch(t, obs, "/latches/lost-expired", 3)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	l := newLatch(t, c, "/latches/lost-expired", 0)
	old := c.Session()

	loseNextReply(p)
	got := countDownAsync(ctxT(t, 90*time.Second), l)
	require.Eventually(t, func() bool { return rawCount(t, obs, "/latches/lost-expired") == 2 }, 30*time.Second,
		10*time.Millisecond, "the server did not apply the count-down")
	zktest.ExpireSession(t, p, old.ID)
	r := receive(t, got, 60*time.Second)
	require.NoError(t, r.err)
	assert.True(t, r.ok)
	assert.NotEqual(t, old.ID, c.Session().ID, "the call finished on a new session")
	assert.Equal(t, 2, rawCount(t, obs, "/latches/lost-expired"))
	markersGone(t, obs, "/latches/lost-expired")
}

// A lost reply to the count-down that took the latch to zero, and the
// latch is gone (deleted by another) before the caller can look: the call
// cannot know, and says so, rather than report a count-down it cannot see.
func TestALostCountDownOnALatchThatFinishedMeanwhileIsAnUnknownOutcome(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	setLatch(t, obs, "/latches/lost-finished", 1)
	p := cl.NewProxy()
	l := newLatch(t, newClient(t, p.Addrs()), "/latches/lost-finished", 0)

	loseNextReply(p)
	got := countDownAsync(ctxT(t, 60*time.Second), l)
	require.Eventually(t, func() bool { return rawCount(t, obs, "/latches/lost-finished") == 0 }, 30*time.Second,
		10*time.Millisecond, "the server did not apply the count-down")
	require.NoError(t, obs.Delete(ctxT(t, 10*time.Second), "/latches/lost-finished", -1, framework.WithChildren()))
	p.Heal()
	r := receive(t, got, 30*time.Second)
	assert.ErrorIs(t, r.err, zkrecipes.ErrOutcomeUnknown)
	assert.False(t, r.ok)
}

// A lost reply to a count-down that was applied, and another caller takes
// the latch to zero and deletes it, the first call's cd- child with it,
// before the first caller can look: it cannot tell whether it counted, and
// says so.
func TestALostCountDownWhoseMarkerTheFinisherDeletedIsAnUnknownOutcome(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/latches/lost-then-finished"
	other := setLatch(t, obs, path, 2)
	p := cl.NewProxy()
	l := newLatch(t, newClient(t, p.Addrs()), path, 0)

	loseNextReply(p)
	got := countDownAsync(ctxT(t, 60*time.Second), l)
	require.Eventually(t, func() bool { return rawCount(t, obs, path) == 1 }, 30*time.Second,
		10*time.Millisecond, "the server did not apply the count-down")
	ok, err := other.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, exists(t, obs, path), "the last count-down deletes the latch")
	p.Heal()
	r := receive(t, got, 30*time.Second)
	assert.ErrorIs(t, r.err, zkrecipes.ErrOutcomeUnknown)
	assert.False(t, r.ok)
}

// The reply to TrySetCount is lost: the setter finds its own gen- child
// and reports that it set the latch.
func TestATrySetCountWhoseReplyIsLostReportsItsOwnLatch(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	p := cl.NewProxy()
	l := newLatch(t, newClient(t, p.Addrs()), "/latches/lost-set", 4)
	// The parent first: the write whose reply is lost must be the latch's.
	_, err := obs.Create(ctxT(t, 10*time.Second), "/latches", nil)
	require.NoError(t, err)

	loseNextReply(p)
	out := make(chan result, 1)
	go func() {
		ok, err := l.TrySetCount(ctxT(t, 60*time.Second))
		out <- result{ok, err}
	}()
	require.Eventually(t, func() bool { return rawCount(t, obs, "/latches/lost-set") == 4 }, 30*time.Second,
		10*time.Millisecond, "the server did not make the latch")
	p.Heal()
	r := receive(t, out, 30*time.Second)
	require.NoError(t, r.err)
	assert.True(t, r.ok, "it was this call that set the latch")
}

// The link fails while the count-down multi is on its way: requests stop
// reaching the server (one-way: replies and events still flow), or the
// link is cut both ways (blackholed). Once it is back, the call completes,
// counting once.
func TestACountDownThroughALinkFaultCountsOnce(t *testing.T) {
	for _, fault := range []struct {
		name   string
		arm    func(*testing.T, *zktest.Proxy) // before the call
		inject func(*testing.T, *zktest.Proxy) // once it is under way
	}{
		{"one-way", func(_ *testing.T, p *zktest.Proxy) { p.DropRequestsFrom(zktest.OpMulti) },
			func(*testing.T, *zktest.Proxy) {}},
		{"blackhole", holdNextWrite, func(t *testing.T, p *zktest.Proxy) {
			waitHeld(t, p)
			p.Blackhole() // the write held goes nowhere
			p.Release()
		}},
	} {
		t.Run(fault.name, func(t *testing.T) {
			path := "/latches/" + fault.name
			cl := zktest.Standalone(t)
			obs := newClient(t, cl.Addrs())
			setLatch(t, obs, path, 3)
			p := cl.NewProxy()
			c := newClient(t, p.Addrs())
			l := newLatch(t, c, path, 0)

			fault.arm(t, p)
			got := countDownAsync(ctxT(t, 60*time.Second), l)
			fault.inject(t, p)
			waitDisconnected(t, c)
			p.Heal()
			r := receive(t, got, 30*time.Second)
			require.NoError(t, r.err)
			assert.True(t, r.ok)
			assert.Equal(t, 2, rawCount(t, obs, path))
			markersGone(t, obs, path)
		})
	}
}

// Links cut again and again under a stream of count-downs: every call
// that reports a count-down made one, and no call made two.
func TestCountDownsUnderRepeatedCutsAreCountedExactly(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const count = 1000
	setLatch(t, obs, "/latches/cuts", count)
	p := cl.NewProxy()
	l := newLatch(t, newClient(t, p.Addrs()), "/latches/cuts", 0)

	stop := testkit.Repeat(40*time.Millisecond, 1<<30, func(int) { p.Cut() })
	counted, unknown := 0, 0
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		ok, err := l.CountDown(ctxT(t, 30*time.Second))
		switch {
		case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
			unknown++
		case err != nil:
			t.Fatalf("count-down: %v", err)
		case ok:
			counted++
		default:
			t.Fatal("the latch opened early")
		}
	}
	stop()
	require.Zero(t, unknown, "the latch never finished: every outcome can be known")
	require.Positive(t, counted)
	assert.Equal(t, count-counted, rawCount(t, obs, "/latches/cuts"), "%d counted calls", counted)
	markersGone(t, obs, "/latches/cuts")
	t.Logf("%d count-downs under cuts every 40ms", counted)
}

// The server restarts while a count-down waits for it: the call completes
// once it is back, counting once.
func TestACountDownDuringAServerRestartCountsOnce(t *testing.T) {
	cl := zktest.Standalone(t, zktest.WithDurable())
	obs := newClient(t, cl.Addrs())
	setLatch(t, obs, "/latches/restart", 2)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	l := newLatch(t, c, "/latches/restart", 0)

	holdNextWrite(t, p)
	got := countDownAsync(ctxT(t, 90*time.Second), l)
	waitHeld(t, p)
	cl.Server(1).Stop() // the write held dies with its link
	p.Release()
	cl.Server(1).Start()
	r := receive(t, got, 60*time.Second)
	require.NoError(t, r.err)
	assert.True(t, r.ok)
	assert.Equal(t, 1, rawCount(t, obs, "/latches/restart"))
}

// A waiter's link is blackholed while the latch opens; it returns once the
// link is back.
func TestWaitThroughABlackholeReturnsOnceTheLinkIsBack(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	setLatch(t, obs, "/latches/await-blackhole", 1)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	l := newLatch(t, c, "/latches/await-blackhole", 0)
	got := waitAsync(ctxT(t, 60*time.Second), l)
	stillWaiting(t, got, absenceWindow)

	p.Blackhole()
	waitDisconnected(t, c)
	ok, err := newLatch(t, obs, "/latches/await-blackhole", 0).CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	p.Heal()
	require.NoError(t, receive(t, got, 30*time.Second))
}

// A waiter's session expires while the latch is being counted down: it
// goes on waiting on its new session and returns when the latch opens.
func TestWaitOutlivesItsSessionExpiry(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	setLatch(t, obs, "/latches/await-expiry", 2)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	l := newLatch(t, c, "/latches/await-expiry", 0)
	got := waitAsync(ctxT(t, 90*time.Second), l)
	stillWaiting(t, got, absenceWindow)

	down := newLatch(t, obs, "/latches/await-expiry", 0)
	_, err := down.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	testkit.LoseSession(t, p, c)
	stillWaiting(t, got, absenceWindow)
	_, err = down.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, receive(t, got, 30*time.Second))
}

// The server restarts under a waiter; the latch opens after.
func TestWaitOutlivesAServerRestart(t *testing.T) {
	cl := zktest.Standalone(t, zktest.WithDurable())
	c := newClient(t, cl.Addrs())
	setLatch(t, c, "/latches/await-restart", 1)
	l := newLatch(t, newClient(t, cl.Addrs()), "/latches/await-restart", 0)
	got := waitAsync(ctxT(t, 90*time.Second), l)
	stillWaiting(t, got, absenceWindow)
	cl.Server(1).Restart()
	stillWaiting(t, got, absenceWindow)
	ok, err := newLatch(t, c, "/latches/await-restart", 0).CountDown(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, receive(t, got, 30*time.Second))
}

// Someone else deletes the latch (path and children): waiters return, as
// Redisson's delete opens its latch, and a count-down finds nothing to
// count.
func TestALatchDeletedBySomeoneElseOpens(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	setLatch(t, obs, "/latches/deleted", 3)
	l := newLatch(t, newClient(t, cl.Addrs()), "/latches/deleted", 0)
	got := waitAsync(ctxT(t, 30*time.Second), l)
	stillWaiting(t, got, absenceWindow)
	require.NoError(t, obs.Delete(ctxT(t, 10*time.Second), "/latches/deleted", -1, framework.WithChildren()))
	require.NoError(t, receive(t, got, 10*time.Second))
	ok, err := l.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.False(t, ok)
}

// A waiter's requests stop reaching the server while the servers' events
// still reach it (one-way fault): the watch event of the last count-down
// arrives, but only a read that is answered may open the wait; it returns
// once the link is back.
func TestWaitThroughAOneWayFaultReturnsOnlyOnAnAnsweredRead(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	setLatch(t, obs, "/latches/await-one-way", 2)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	l := newLatch(t, c, "/latches/await-one-way", 0)
	got := waitAsync(ctxT(t, 60*time.Second), l)
	stillWaiting(t, got, absenceWindow)

	p.DropRequests()
	down := newLatch(t, obs, "/latches/await-one-way", 0)
	ok, err := down.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	stillWaiting(t, got, absenceWindow) // one left: the event woke it, the count did not
	waitDisconnected(t, c)
	ok, err = down.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	p.Heal()
	require.NoError(t, receive(t, got, 30*time.Second))
}

// A count-down whose context ends after its multi was handed to the
// connection cannot know whether it counted, and says so.
func TestACountDownWhoseContextEndsInFlightIsAnUnknownOutcome(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	setLatch(t, obs, "/latches/ctx-in-flight", 2)
	p := cl.NewProxy()
	l := newLatch(t, newClient(t, p.Addrs()), "/latches/ctx-in-flight", 0)

	p.DropRequestsFrom(zktest.OpMulti) // the count-down's multi, and all after it, go nowhere
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	ok, err := l.CountDown(ctx)
	assert.False(t, ok)
	assert.ErrorIs(t, err, zkrecipes.ErrOutcomeUnknown)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	p.Heal()
}

// The session expires with the count-down multi on its way (its link
// blackholed from that moment): the call goes on from the new session and
// counts once.
func TestACountDownWhoseSessionExpiresInFlightCountsOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	setLatch(t, obs, "/latches/expiry-in-flight", 2)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	l := newLatch(t, c, "/latches/expiry-in-flight", 0)
	old := c.Session()

	holdNextWrite(t, p)
	got := countDownAsync(ctxT(t, 90*time.Second), l)
	waitHeld(t, p)
	p.Blackhole() // the write held goes nowhere
	p.Release()
	zktest.ExpireSession(t, p, old.ID)
	r := receive(t, got, 60*time.Second)
	require.NoError(t, r.err)
	assert.True(t, r.ok)
	assert.NotEqual(t, old.ID, c.Session().ID)
	assert.Equal(t, 1, rawCount(t, obs, "/latches/expiry-in-flight"))
	markersGone(t, obs, "/latches/expiry-in-flight")
}

// A count-down whose reply is lost after the server applied it to one
// latch, which then finishes and is replaced by a new latch at the same
// path before the call hears back, does not count again on the new latch:
// the call already counted, on the first one. (A new latch has another
// gen- child than the one its multi checked.)
func TestALostCountDownNeverCountsAgainOnTheNextLatch(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/latches/lost-then-replaced"
	setLatch(t, obs, path, 1)
	p := cl.NewProxy()
	l := newLatch(t, newClient(t, p.Addrs()), path, 0)

	loseNextReply(p)
	got := countDownAsync(ctxT(t, 60*time.Second), l)
	require.Eventually(t, func() bool { return rawCount(t, obs, path) == 0 }, 30*time.Second,
		10*time.Millisecond, "the server did not apply the count-down")
	// The first latch is open; someone sets the next one at the path (its
	// TrySetCount finishes the first).
	setLatch(t, obs, path, 2)
	p.Heal()
	r := receive(t, got, 30*time.Second)
	assert.Equal(t, 2, rawCount(t, obs, path), "the call counted on the first latch and again on the second")
	assert.Empty(t, countDowns(t, obs, path), "the second latch has a count-down it was never given")
	if r.err == nil {
		assert.True(t, r.ok)
	} else {
		assert.ErrorIs(t, r.err, zkrecipes.ErrOutcomeUnknown)
	}
}
