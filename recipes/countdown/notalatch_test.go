package countdown_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// A node at the path that holds a 4-byte count of 0 (or below) but has no
// gen- child is not a latch: a latch at zero always still has its gen-
// child, because finish deletes it in the same multi as the path. A
// Curator SharedCount at 0 on the path (the format the package shares with
// SharedCount) is refused with zkrecipes.ErrBadData, and nothing changes:
// CountDown does not take it for a finished latch and delete it, with
// every child it has.
func TestCountDownDoesNotDeleteASharedCountAtZero(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	ctx := ctxT(t, 30*time.Second)
	sc, err := shared.NewCount(c, "/foreign/count", 0)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	t.Cleanup(func() { sc.Close() })
	_, err = c.Create(ctx, "/foreign/count/config", []byte("keep me"))
	require.NoError(t, err)

	l := newLatch(t, newClient(t, cl.Addrs()), "/foreign/count", 0)
	ok, err := l.CountDown(ctx)
	assert.False(t, ok)
	assert.ErrorIs(t, err, zkrecipes.ErrBadData, "a 0-count node without a gen- child is not a latch")
	assert.True(t, exists(t, c, "/foreign/count"), "the SharedCount's node was deleted by CountDown")
	assert.True(t, exists(t, c, "/foreign/count/config"), "a foreign child was deleted by CountDown")
}

// Nor does TrySetCount replace it with a latch.
func TestTrySetCountDoesNotReplaceASharedCountAtZero(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	ctx := ctxT(t, 30*time.Second)
	sc, err := shared.NewCount(c, "/foreign/count2", 0)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	t.Cleanup(func() { sc.Close() })
	_, before, err := c.Get(ctx, "/foreign/count2")
	require.NoError(t, err)

	l := newLatch(t, newClient(t, cl.Addrs()), "/foreign/count2", 5)
	ok, err := l.TrySetCount(ctx)
	assert.False(t, ok, "TrySetCount replaced a SharedCount node with a latch")
	assert.ErrorIs(t, err, zkrecipes.ErrBadData)
	_, st, err := c.Get(ctx, "/foreign/count2")
	require.NoError(t, err)
	assert.Equal(t, before.Czxid, st.Czxid, "the SharedCount's node was deleted and made again")
}
