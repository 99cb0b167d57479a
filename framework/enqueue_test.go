package framework_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

func TestEnqueueReturnsNodeCzxidOwnerAndAListThatHasIt(t *testing.T) {
	for _, ns := range []string{"", "app"} {
		t.Run("namespace="+ns, func(t *testing.T) {
			cl := zktest.Standalone(t)
			c, _ := dialFault(t, cl, framework.WithNamespace(ns))
			for i := 0; i < 3; i++ {
				q, err := c.Enqueue(t.Context(), "/q/lock-", []byte("me"))
				require.NoError(t, err)
				assert.True(t, framework.IsProtected(framework.Base(q.Path)))
				assert.True(t, slices.Contains(q.Children, framework.Base(q.Path)))
				assert.Len(t, q.Children, i+1)
				_, st, err := c.Exists(t.Context(), q.Path)
				require.NoError(t, err)
				assert.Equal(t, st.Czxid, q.Czxid, "the czxid read off the create's reply")
				assert.Equal(t, c.Session().ID, q.Owner)
				assert.Equal(t, st.EphemeralOwner, q.Owner)
			}
		})
	}
}

func TestEnqueueRidesOverALostReply(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl)
	obs := observer(t, cl)
	_, err := obs.Create(t.Context(), "/q", nil)
	require.NoError(t, err)

	p.DropReplies()
	type res struct {
		q   *framework.Queued
		err error
	}
	out := make(chan res, 1)
	go func() { q, err := c.Enqueue(t.Context(), "/q/lock-", nil); out <- res{q, err} }()
	waitChildren(t, obs, "/q", 1)
	p.Heal()
	r := <-out
	require.NoError(t, r.err)
	assert.Equal(t, []string{framework.Base(r.q.Path)}, children(t, obs, "/q"))
	_, st, err := obs.Exists(t.Context(), r.q.Path)
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, r.q.Czxid)
}

func TestDeleteInBackgroundTakesEffectBeforeTheClientsNextRequest(t *testing.T) {
	cl := zktest.Standalone(t)
	c, _ := dialFault(t, cl)
	for i := 0; i < 20; i++ {
		_, err := c.Create(t.Context(), "/gone", nil)
		require.NoError(t, err)
		require.NoError(t, c.Delete(t.Context(), "/gone", -1, framework.InBackground()))
		ok, _, err := c.Exists(t.Context(), "/gone")
		require.NoError(t, err)
		require.False(t, ok, "round %d: a later request saw the node", i)
	}
}

func TestDeleteInBackgroundWhileCutOffFinishesInTheBackground(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl)
	obs := observer(t, cl)
	_, err := c.Create(t.Context(), "/doomed", nil)
	require.NoError(t, err)

	p.Blackhole()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_ = c.Delete(ctx, "/doomed", -1, framework.InBackground()) // sent into the void, or not sent at all
	p.Heal()
	require.NoError(t, c.Drain(t.Context()))
	ok, _, err := obs.Exists(t.Context(), "/doomed")
	require.NoError(t, err)
	assert.False(t, ok)
}

// A delete OwnedBy, InBackground, is sent at once for the current session's node, and
// leaves a node alone that is no longer an ephemeral of the session named:
// here one of the same path made by another session after ours expired.
func TestDeleteOwnedByInBackgroundDeletesOnlyWhileTheNodeIsTheOwners(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl)
	obs := observer(t, cl)

	mine, err := c.Create(t.Context(), "/own", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	require.NoError(t, c.Delete(t.Context(), mine, -1, framework.OwnedBy(c.Session().ID), framework.InBackground()))
	ok, _, err := c.Exists(t.Context(), mine)
	require.NoError(t, err)
	assert.False(t, ok, "the current session's node is deleted before the next request")

	old := c.Session().ID
	zktest.ExpireSession(t, p, old)
	_, err = obs.Create(t.Context(), "/own", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	require.NoError(t, c.Delete(t.Context(), "/own", -1, framework.OwnedBy(old), framework.InBackground()))
	require.NoError(t, c.Drain(t.Context()))
	ok, _, err = obs.Exists(t.Context(), "/own")
	require.NoError(t, err)
	assert.True(t, ok, "another session's node of the same path was deleted")
}
