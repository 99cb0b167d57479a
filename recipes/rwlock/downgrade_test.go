package rwlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
)

// A downgrade whose write node someone else deletes while the read node is
// being made must not hand out the read hold: the next writer may already
// hold the lock, and the read node, sorting into the old write node's
// place, would let a reader in beside it. The proxy holds the read node's
// create, the downgrade's first request, so the deletion lands after the
// downgrade has checked its write hold and before the read node exists.
func TestDowngradeFailsIfTheWriteNodeVanishesMeanwhile(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := testkit.Client(t, p.Addrs())
	other := testkit.Client(t, cl.Addrs())
	l, err := rwlock.New(c, "/rw/vanish")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	wh, err := l.WriteLock().Acquire(testkit.Ctx(t, 10*time.Second))
	require.NoError(t, err)

	// The downgrade runs on this goroutine, the write lock's holder; the
	// deletion, on another.
	p.StallRequestsFrom(zktest.OpCreate)
	deleted := make(chan error, 1)
	go func() {
		defer p.Release()
		if !waitFor(p.Stalled, 10*time.Second) {
			deleted <- errors.New("the downgrade never created its read node")
			return
		}
		deleted <- other.Delete(testkit.Ctx(t, 10*time.Second), wh.Path(), -1)
	}()
	_, err = l.ReadLock().Acquire(testkit.Ctx(t, 10*time.Second))
	require.NoError(t, <-deleted)
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	testkit.WaitChildren(t, other, "/rw/vanish", 0)
}

// waitFor polls cond until it holds or d has passed, and says which.
func waitFor(cond func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond) // polling interval
	}
	return true
}
