package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func TestMultiLockTakesAllAndReleasesAll(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	a, b := newMutex(t, c, "/locks/a"), newMutex(t, c, "/locks/b")
	ml, err := mutex.NewMultiLock(a, b)
	require.NoError(t, err)

	holds, err := ml.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Len(t, holds, 2)
	assert.Less(t, holds[0].Token(), holds[1].Token(), "taken in order")
	assert.Len(t, nodes(t, c, "/locks/a"), 1)
	assert.Len(t, nodes(t, c, "/locks/b"), 1)

	require.NoError(t, hold.ReleaseAll(holds...))
	assert.Empty(t, nodes(t, c, "/locks/a"))
	assert.Empty(t, nodes(t, c, "/locks/b"))
}

func TestMultiLockIsAllOrNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	other := newMutex(t, newClient(t, cl.Addrs()), "/locks/c")
	_, err := other.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	c := newClient(t, cl.Addrs())
	ml, err := mutex.NewMultiLock(newMutex(t, c, "/locks/a"), newMutex(t, c, "/locks/b"), newMutex(t, c, "/locks/c"))
	require.NoError(t, err)
	_, err = ml.Acquire(ctxT(t, 500*time.Millisecond)) // one deadline for the set
	require.ErrorIs(t, err, context.DeadlineExceeded)

	require.NoError(t, c.Drain(ctxT(t, 10*time.Second)))
	assert.Empty(t, nodes(t, obs, "/locks/a"), "rolled back")
	assert.Empty(t, nodes(t, obs, "/locks/b"), "rolled back")
	assert.Len(t, nodes(t, obs, "/locks/c"), 1, "only the other holder's node")
}

func TestMultiLockRejectsBadInput(t *testing.T) {
	_, err := mutex.NewMultiLock()
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	_, err = mutex.NewMultiLock(nil)
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	var m *mutex.Mutex
	_, err = mutex.NewMultiLock(m)
	assert.Error(t, err, "a typed nil is still nil")
}
