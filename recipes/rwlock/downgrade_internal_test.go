package rwlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/internal/testkit"
)

// A downgrade whose write node someone else deletes while the read node is
// being made must not hand out the read hold: the next writer may already
// hold the lock, and the read node, sorting into the old write node's
// place, would let a reader in beside it. The deletion is made to land
// between the check of the write hold and the create of the read node.
func TestDowngradeFailsIfTheWriteNodeVanishesMeanwhile(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	other := testkit.Client(t, cl.Addrs())
	l, err := New(c, "/rw/vanish")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	wh, err := l.WriteLock().Acquire(testkit.Ctx(t, 10*time.Second))
	require.NoError(t, err)

	testHookBeforeDowngradeCreate = func() {
		require.NoError(t, other.Delete(testkit.Ctx(t, 10*time.Second), wh.Path(), -1))
	}
	t.Cleanup(func() { testHookBeforeDowngradeCreate = nil })
	_, err = l.ReadLock().Acquire(testkit.Ctx(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	testkit.WaitChildren(t, other, "/rw/vanish", 0)
}
