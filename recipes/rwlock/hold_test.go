package rwlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A read hold whose node someone else deletes (an operator's deleteall) is
// lost at once, with zkrecipes.ErrNodeDeleted, and says so on Release; the writer
// queued behind it on another session is granted.
func TestReadHoldWhoseNodeIsDeletedBySomeoneElseIsLost(t *testing.T) {
	cl := zktest.Standalone(t)
	operator := newClient(t, cl.Addrs())
	l := newRW(t, newClient(t, cl.Addrs()), "/rw/deleted-read")
	writer := newRW(t, newClient(t, cl.Addrs()), "/rw/deleted-read")

	h, err := l.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	w := acquireAsync(writer.WriteLock())
	waitNodes(t, operator, "/rw/deleted-read", 2)

	require.NoError(t, operator.Delete(ctxT(t, 10*time.Second), h.Path(), -1))
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the reader was not told its node was deleted")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
	w.granted(t)
	assert.ErrorIs(t, l.ReadLock().Release(), zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, l.ReadLock().Release(), zkrecipes.ErrNotHeld)
	w.done(t)
	waitNodes(t, operator, "/rw/deleted-read", 0)
}

// A write hold whose node someone else deletes is lost at once, with
// zkrecipes.ErrNodeDeleted, and says so on Release; the reader queued behind it on
// another session is granted.
func TestWriteHoldWhoseNodeIsDeletedBySomeoneElseIsLost(t *testing.T) {
	cl := zktest.Standalone(t)
	operator := newClient(t, cl.Addrs())
	l := newRW(t, newClient(t, cl.Addrs()), "/rw/deleted-write")
	reader := newRW(t, newClient(t, cl.Addrs()), "/rw/deleted-write")

	h, err := l.WriteLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	r := acquireAsync(reader.ReadLock())
	waitNodes(t, operator, "/rw/deleted-write", 2)

	require.NoError(t, operator.Delete(ctxT(t, 10*time.Second), h.Path(), -1))
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the writer was not told its node was deleted")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
	r.granted(t)
	assert.ErrorIs(t, l.WriteLock().Release(), zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, l.WriteLock().Release(), zkrecipes.ErrNotHeld)
	r.done(t)
	waitNodes(t, operator, "/rw/deleted-write", 0)
}

// A read hold made by a downgrade (a plain ephemeral node in the write
// node's place) follows its node as every hold does: deleted by someone
// else after the write hold is released, it is lost at once, and the
// writer queued behind it is granted.
func TestDowngradedReadHoldWhoseNodeIsDeletedBySomeoneElseIsLost(t *testing.T) {
	cl := zktest.Standalone(t)
	operator := newClient(t, cl.Addrs())
	l := newRW(t, newClient(t, cl.Addrs()), "/rw/deleted-down")
	writer := newRW(t, newClient(t, cl.Addrs()), "/rw/deleted-down")

	_, err := l.WriteLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	h, err := l.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, l.WriteLock().Release())
	w := acquireAsync(writer.WriteLock())
	waitNodes(t, operator, "/rw/deleted-down", 2)
	w.blocked(t)

	require.NoError(t, operator.Delete(ctxT(t, 10*time.Second), h.Path(), -1))
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the reader was not told its node was deleted")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
	w.granted(t)
	assert.ErrorIs(t, l.ReadLock().Release(), zkrecipes.ErrHoldLost)
	w.done(t)
	waitNodes(t, operator, "/rw/deleted-down", 0)
}
