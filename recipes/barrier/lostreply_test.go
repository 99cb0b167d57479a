package barrier_test

// Set and Remove are sent at most once. The client's own retry resent a
// create or a delete whose reply was lost, and the resend could redo it
// over another client's call made in between: a removal resent took the
// barrier another client had set again, a set resent set the one another
// client had removed, each reporting plain success.

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

// lostReplyBarrier is a Barrier on a client of its own behind p, and the
// client, so that a test can wait for it to notice its dead link.
func lostReplyBarrier(t *testing.T, cl *zktest.Cluster, path string) (*barrier.Barrier, *framework.Client, *zktest.Proxy) {
	t.Helper()
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	return newBarrier(t, c, path), c, p
}

func czxid(t *testing.T, c *framework.Client, path string) (int64, bool) {
	t.Helper()
	ok, st, err := c.Exists(context.Background(), path)
	require.NoError(t, err)
	if !ok {
		return 0, false
	}
	return st.Czxid, true
}

// The removal is applied, its reply lost; another client sets the barrier
// again before the remover hears back. Remove reports the removal it made,
// and the new barrier stands.
func TestRemoveWhoseReplyIsLostLeavesTheBarrierSetSinceStanding(t *testing.T) {
	cl := zktest.Standalone(t)
	const path = "/b/lost/remove"
	other := newBarrier(t, newClient(t, cl.Addrs()), path)
	obs := newClient(t, cl.Addrs())
	require.NoError(t, other.Set(ctxT(t, 10*time.Second)))
	r, _, p := lostReplyBarrier(t, cl, path)

	p.DropRepliesFrom(zktest.OpDelete)
	got := async(func() error { return r.Remove(ctxT(t, 60*time.Second)) })
	require.Eventually(t, func() bool { _, ok := czxid(t, obs, path); return !ok }, 30*time.Second, 5*time.Millisecond,
		"the removal was not applied")
	require.NoError(t, other.Set(ctxT(t, 10*time.Second)))
	set, _ := czxid(t, obs, path)
	p.Heal()
	require.NoError(t, returned(t, got, 30*time.Second, "Remove"), "the removal was made")
	now, ok := czxid(t, obs, path)
	assert.True(t, ok, "Remove took the barrier set after its own removal")
	assert.Equal(t, set, now)
}

// The removal never reaches the server: Remove finds the same barrier
// standing (same czxid) and sends it again, once it knows the first was
// not applied.
func TestRemoveWhoseRequestIsLostRemovesOnceTheLinkIsBack(t *testing.T) {
	cl := zktest.Standalone(t)
	const path = "/b/lost/remove-request"
	obs := newClient(t, cl.Addrs())
	require.NoError(t, newBarrier(t, obs, path).Set(ctxT(t, 10*time.Second)))
	r, rc, p := lostReplyBarrier(t, cl, path)

	p.DropRequestsFrom(zktest.OpDelete)
	got := async(func() error { return r.Remove(ctxT(t, 60*time.Second)) })
	require.Eventually(t, func() bool { return !rc.State().IsConnected() }, 30*time.Second, 10*time.Millisecond)
	p.Heal()
	require.NoError(t, returned(t, got, 30*time.Second, "Remove"))
	_, ok := czxid(t, obs, path)
	assert.False(t, ok, "the barrier stands")
}

// The set is applied, its reply lost; another client removes the barrier
// before the setter hears back. Set cannot tell its own set, removed since,
// from a set never applied: it says so (zkrecipes.ErrOutcomeUnknown), and does not
// set the barrier again.
func TestSetWhoseReplyIsLostNeverSetsTheBarrierRemovedSince(t *testing.T) {
	cl := zktest.Standalone(t)
	const path = "/b/lost/set"
	other := newBarrier(t, newClient(t, cl.Addrs()), path)
	obs := newClient(t, cl.Addrs())
	_, err := obs.Create(context.Background(), "/b/lost", nil, framework.WithParents())
	require.NoError(t, err) // so that the barrier's own create is the first sent
	s, _, p := lostReplyBarrier(t, cl, path)

	p.DropRepliesFrom(zktest.OpCreate, zktest.OpCreateContainer)
	got := async(func() error { return s.Set(ctxT(t, 60*time.Second)) })
	require.Eventually(t, func() bool { _, ok := czxid(t, obs, path); return ok }, 30*time.Second, 5*time.Millisecond,
		"the set was not applied")
	require.NoError(t, other.Remove(ctxT(t, 10*time.Second)))
	p.Heal()
	err = returned(t, got, 30*time.Second, "Set")
	assert.ErrorIs(t, err, zkrecipes.ErrOutcomeUnknown)
	assert.ErrorIs(t, err, zkrecipes.ErrOutcomeUnknown)
	_, ok := czxid(t, obs, path)
	assert.False(t, ok, "Set set the barrier again after another client removed it")
}

// The set is applied, its reply lost, and nobody removes it: the barrier
// stands, so Set reports success.
func TestSetWhoseReplyIsLostSucceedsWhenTheBarrierStands(t *testing.T) {
	cl := zktest.Standalone(t)
	const path = "/b/lost/set-stands"
	obs := newClient(t, cl.Addrs())
	_, err := obs.Create(context.Background(), "/b/lost", nil, framework.WithParents())
	if err != nil {
		require.ErrorIs(t, err, zk.ErrNodeExists)
	}
	s, _, p := lostReplyBarrier(t, cl, path)

	p.DropRepliesFrom(zktest.OpCreate, zktest.OpCreateContainer)
	got := async(func() error { return s.Set(ctxT(t, 60*time.Second)) })
	require.Eventually(t, func() bool { _, ok := czxid(t, obs, path); return ok }, 30*time.Second, 5*time.Millisecond,
		"the set was not applied")
	p.Heal()
	require.NoError(t, returned(t, got, 30*time.Second, "Set"))
	_, ok := czxid(t, obs, path)
	assert.True(t, ok)
}
