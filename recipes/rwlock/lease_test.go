package rwlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
)

// A forgotten write hold ends by its lease time and lets a reader in; a
// read hold made by a downgrade has the lease too.
func TestLeaseTimeEndsWriteAndDowngradedReadHolds(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	leased, err := rwlock.New(c, "/rw/lease", rwlock.WithLeaseTime(400*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { leased.Close() })
	other := newRW(t, newClient(t, cl.Addrs()), "/rw/lease")

	w, err := leased.WriteLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	_, ok := w.Expiry()
	require.True(t, ok)
	r, err := other.ReadLock().Acquire(ctxT(t, 10*time.Second)) // waits for the lease's end
	require.NoError(t, err)
	testkit.WaitClosed(t, w.Done(), time.Second, "the writer's signal, which fires before the reader is let in")
	assert.ErrorIs(t, w.Err(), zkrecipes.ErrLeaseExpired)
	assert.ErrorIs(t, leased.WriteLock().Release(), zkrecipes.ErrLeaseExpired)
	require.NoError(t, other.ReadLock().Release())
	_ = r

	// Downgrade: the read hold it makes ends by its own lease.
	w2, err := leased.WriteLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	rd, err := leased.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, leased.WriteLock().Release())
	_ = w2
	_, ok = rd.Expiry()
	assert.True(t, ok, "the downgraded read hold has a lease")
	testkit.WaitClosed(t, rd.Done(), 5*time.Second, "the read hold's lease")
	assert.ErrorIs(t, rd.Err(), zkrecipes.ErrLeaseExpired)
	assert.ErrorIs(t, leased.ReadLock().Release(), zkrecipes.ErrHoldLost)
	waitNodes(t, c, "/rw/lease", 0)

	_, err = rwlock.New(c, "/rw/lease", rwlock.WithLeaseTime(-time.Millisecond))
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
}
