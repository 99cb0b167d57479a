package countdown_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// review17: a node at the path that holds a 4-byte count of 0 (or below)
// but has no gen- child is not a latch: a latch at zero always still has
// its gen- child, because finish deletes it in the same multi as the path.
// zkrecipes.ErrBadData's doc says such a node is refused with "nothing changed".
// CountDown and TrySetCount instead treat it as a finished latch and
// delete it (and every child it has): a Curator SharedCount at 0 on the
// path (the format the package advertises as shared with SharedCount) is
// destroyed by a CountDown, and replaced by a latch by a TrySetCount.
func TestReview17CountDownMustNotDeleteASharedCountAtZero(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	ctx := ctxT(t, 30*time.Second)
	sc, err := shared.NewCount(c, "/review17/count", 0)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	t.Cleanup(func() { sc.Close() })
	_, err = c.Create(ctx, "/review17/count/config", []byte("keep me"))
	require.NoError(t, err)

	l := newLatch(t, newClient(t, cl.Addrs()), "/review17/count", 0)
	ok, err := l.CountDown(ctx)
	assert.False(t, ok)
	assert.ErrorIs(t, err, countdownErrNotLatch, "a 0-count node without a gen- child is not a latch")
	assert.True(t, exists(t, c, "/review17/count"), "the SharedCount's node was deleted by CountDown")
	assert.True(t, exists(t, c, "/review17/count/config"), "a foreign child was deleted by CountDown")
}

func TestReview17TrySetCountMustNotReplaceASharedCountAtZero(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	ctx := ctxT(t, 30*time.Second)
	sc, err := shared.NewCount(c, "/review17/count2", 0)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	t.Cleanup(func() { sc.Close() })
	_, before, err := c.Get(ctx, "/review17/count2")
	require.NoError(t, err)

	l := newLatch(t, newClient(t, cl.Addrs()), "/review17/count2", 5)
	ok, err := l.TrySetCount(ctx)
	assert.False(t, ok, "TrySetCount replaced a SharedCount node with a latch")
	assert.ErrorIs(t, err, countdownErrNotLatch)
	_, st, err := c.Get(ctx, "/review17/count2")
	require.NoError(t, err)
	assert.Equal(t, before.Czxid, st.Czxid, "the SharedCount's node was deleted and made again")
}

var countdownErrNotLatch = zkrecipes.ErrBadData

// review17: a count-down whose reply is lost after the server applied it
// to one latch, which then finishes and is replaced by a new latch at the
// same path before the call hears back, must not count again on the new
// latch: the call already counted (on the first one). CountDown only
// treats "no latch" or "a latch at zero" as "finished while the outcome
// was unknown"; a new latch with a count (another gen- child than the one
// its multi checked) is counted down again, so one call counts twice, and
// on a later latch at the same path.
func TestReview17ALostCountDownNeverCountsAgainOnTheNextLatch(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const path = "/latches/lost-then-replaced"
	setLatch(t, obs, path, 1)
	p := cl.NewProxy()
	l := newLatch(t, newClient(t, p.Addrs()), path, 0)

	loseNextReply(t, p)
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
