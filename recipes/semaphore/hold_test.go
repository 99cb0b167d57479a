package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A lease whose node someone else deletes (an operator's deleteall) is lost
// at once, with zkrecipes.ErrNodeDeleted, and says so on Release; the acquirer
// waiting for room on another session gets the lease.
func TestLeaseWhoseNodeIsDeletedBySomeoneElseIsLost(t *testing.T) {
	cl := zktest.Standalone(t)
	operator := newClient(t, cl.Addrs())
	s := newSem(t, newClient(t, cl.Addrs()), "/sem/deleted", 1)
	waiter := newSem(t, newClient(t, cl.Addrs()), "/sem/deleted", 1)

	leases, err := s.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	l := leases[0]
	got := acquireAsync(ctxT(t, 60*time.Second), waiter, 1)
	waitNodes(t, operator, "/sem/deleted/leases", 2)
	notGranted(t, got)

	require.NoError(t, operator.Delete(ctxT(t, 10*time.Second), l.Path(), -1))
	testkit.WaitClosed(t, l.Done(), 10*time.Second, "the holder was not told its lease node was deleted")
	assert.ErrorIs(t, l.Err(), zkrecipes.ErrNodeDeleted)
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	assert.Greater(t, a.leases[0].Token(), l.Token())
	assert.ErrorIs(t, l.Release(), zkrecipes.ErrHoldLost)
	assert.Empty(t, s.Holds(), "a lost lease still counted as held")
	closeAll(t, a.leases)
	waitNodes(t, operator, "/sem/deleted/leases", 0)
}
