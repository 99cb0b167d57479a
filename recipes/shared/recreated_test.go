package shared_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// TrySet writes only if nobody changed the node since the value it is
// given was read, so that read-modify-write loops never lose an update.
// Here the node is deleted and made again by someone else (version 0
// again, another value) after previous was read, and the follower has not
// seen it yet (its replies lag). ZooKeeper compares versions only, so
// TrySet's setData at version 0 may apply to the new node, over a value
// previous never showed: that is not reported as a success, and, if it
// was applied, it says so (zkrecipes.ErrRecreated). Curator's trySetValue
// reports a success; the set's reply has the Czxid that shows it.
func TestTrySetAcrossADeleteAndRecreateIsNotASuccess(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	obs := newClient(t, cl.Addrs())
	const path = "/shared/aba"
	n := newCount(t, c, path, 5)
	prev, err := n.Get()
	require.NoError(t, err)
	require.Equal(t, int32(0), prev.Version)

	p.LagReplies(300 * time.Millisecond) // the follower hears of changes late
	ctx := ctxT(t, 10*time.Second)
	require.NoError(t, obs.Delete(ctx, path, -1))
	_, err = obs.Create(ctx, path, shared.EncodeCount(100)) // version 0 again
	require.NoError(t, err)

	_, ok, err := n.TrySet(ctx, prev, prev.Value+1)
	data, _, gerr := obs.Get(ctx, path)
	require.NoError(t, gerr)
	got, derr := shared.DecodeCount(data)
	require.NoError(t, derr)
	assert.False(t, ok, "TrySet from count 5 reported success over a node made again with 100 (now %d)", got)
	if got == prev.Value+1 {
		// ZooKeeper applied it (it compares versions only): the caller
		// must be told it was, and over what it never read, so that it
		// neither counts it a success nor applies it again.
		assert.ErrorIs(t, err, zkrecipes.ErrRecreated)
	} else {
		assert.NoError(t, err)
	}
}
