package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A lease the Semaphore's Close gave back says so at every later Release,
// and at Fenced: released, and by Close; one lost before Close says that
// too.
func TestLeaseReleasedByCloseSaysSoEveryTime(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	other := newClient(t, cl.Addrs())
	s := newSem(t, c, "/sem/closerel", 3)
	leases, err := s.Acquire(ctxT(t, 10*time.Second), 2)
	require.NoError(t, err)
	lost := leases[1]
	require.NoError(t, other.Delete(ctxT(t, 10*time.Second), lost.Path(), -1))
	select {
	case <-lost.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease whose node was deleted never ended")
	}
	require.NoError(t, s.Close())
	for i := range 2 {
		err := leases[0].Release()
		assert.ErrorIs(t, err, zkrecipes.ErrReleased, "release %d", i)
		assert.ErrorIs(t, err, zkrecipes.ErrClosed, "release %d", i)
		assert.NotErrorIs(t, err, zkrecipes.ErrHoldLost, "release %d", i)
		err = lost.Release()
		assert.ErrorIs(t, err, zkrecipes.ErrReleased, "release %d of the lost one", i)
		assert.ErrorIs(t, err, zkrecipes.ErrClosed, "release %d of the lost one", i)
		assert.ErrorIs(t, err, zkrecipes.ErrHoldLost, "release %d of the lost one", i)
	}
	_, err = leases[0].Fenced(ctxT(t, 5*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	waitNodes(t, other, "/sem/closerel/leases", 0)
}
