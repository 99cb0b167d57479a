package countdown_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// review17: a node at the path that holds a 4-byte count of 0 (or below)
// but has no gen- child is not a latch: a latch at zero always still has
// its gen- child, because finish deletes it in the same multi as the path.
// ErrNotLatch's doc says such a node is refused with "nothing changed".
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

var countdownErrNotLatch = countdown.ErrNotLatch
