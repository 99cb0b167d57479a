package mutex_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A hold the Mutex's Close gave back says so to Fenced (engine's doc: the
// holder's Release, and Fenced, then say so), before the holder's Release
// and after it, and to every Release.
func TestHoldReleasedByCloseSaysSoToFencedAndRelease(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	m := newMutex(t, c, "/closerel/m")
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, m.Close())
	set := &zk.SetDataRequest{Path: "/closerel/m", Data: []byte("x"), Version: -1}
	_, err = h.Fenced(ctxT(t, 5*time.Second), set)
	assert.ErrorIs(t, err, zkrecipes.ErrReleased, "Fenced before Release")
	assert.ErrorIs(t, err, zkrecipes.ErrClosed, "Fenced before Release")
	for i := range 2 {
		err := h.Release()
		assert.ErrorIs(t, err, zkrecipes.ErrReleased, "release %d", i)
		assert.ErrorIs(t, err, zkrecipes.ErrClosed, "release %d", i)
	}
	_, err = h.Fenced(ctxT(t, 5*time.Second), set)
	assert.ErrorIs(t, err, zkrecipes.ErrReleased, "Fenced after Release")
	assert.ErrorIs(t, err, zkrecipes.ErrClosed, "Fenced after Release")
}
