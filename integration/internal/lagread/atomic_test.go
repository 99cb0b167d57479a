package lagread_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/recipes/counter"
)

// A compare-and-set called after the value became what it expects
// succeeds, whichever server answers: on a follower that has not applied
// that write yet it must not fail, reporting an older value as the one it
// found. (CompareAndSet reads with no sync and, finding another value,
// returns without a write.)
func TestCompareAndSetOnALaggingFollowerSeesAValueSetBeforeIt(t *testing.T) {
	e := newLaggingEnsemble(t)
	a, err := counter.NewLong(e.Leader, "/lag/counter")
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	b, err := counter.NewLong(e.Lagging, "/lag/counter")
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	ok, err := a.Initialize(ctxT(t, 10*time.Second), 5)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool {
		r, err := b.Get(ctxT(t, 10*time.Second))
		return err == nil && r.PostValue == 5
	}, 10*time.Second, 20*time.Millisecond, "the follower never saw the first value")
	e.Lag(t)

	r, err := a.CompareAndSet(ctxT(t, 10*time.Second), 5, 6)
	require.NoError(t, err)
	require.True(t, r.Succeeded)
	r, err = b.CompareAndSet(ctxT(t, lagging), 6, 7)
	require.NoError(t, err)
	assert.True(t, r.Succeeded, "CompareAndSet(6, 7) failed, reporting %d as the value it found", r.PreValue)
}
