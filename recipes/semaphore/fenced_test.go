package semaphore_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A lease fences its own lease node: the lease whose node is gone cannot
// write, another lease still can.
func TestFencedWriteUnderALeaseChecksThatLeasesOwnNode(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	other := newClient(t, cl.Addrs())
	leases, err := newSem(t, c, "/sem/f", 2).Acquire(ctxT(t, 10*time.Second), 2)
	require.NoError(t, err)
	a, b := leases[0], leases[1]

	_, err = a.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/a1"})
	require.NoError(t, err)
	require.NoError(t, other.Delete(ctxT(t, 10*time.Second), a.Path(), -1))
	_, err = a.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/a2"})
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrNodeDeleted)
	_, err = b.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/b1"})
	require.NoError(t, err, "the other lease stands")

	for p, want := range map[string]bool{"/a1": true, "/a2": false, "/b1": true} {
		ok, _, err := other.Exists(ctxT(t, 10*time.Second), p)
		require.NoError(t, err)
		assert.Equal(t, want, ok, p)
	}
}
