package framework_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// An enqueue whose create went out (its listing joined from the send loop)
// into a partition that outlasts the session comes back with a node of the
// new session, its czxid, and a listing that has it.
func TestEnqueueAcrossASessionExpiryReturnsANodeOfTheNewSession(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl)
	obs := observer(t, cl)
	_, err := obs.Create(t.Context(), "/qx", nil)
	require.NoError(t, err)
	old := c.Session().ID
	p.Blackhole()
	type res struct {
		q   *framework.Queued
		err error
	}
	out := make(chan res, 1)
	go func() { q, err := c.Enqueue(t.Context(), "/qx/lock-", nil); out <- res{q, err} }()
	zktest.ExpireSession(t, p, old) // until the servers drop the session; then it heals p
	r := <-out
	require.NoError(t, r.err)
	assert.NotEqual(t, old, r.q.Owner)
	assert.Equal(t, c.Session().ID, r.q.Owner)
	assert.True(t, slices.Contains(r.q.Children, framework.Base(r.q.Path)))
	_, st, err := obs.Exists(t.Context(), r.q.Path)
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, r.q.Czxid)
	assert.Equal(t, st.EphemeralOwner, r.q.Owner)
	assert.Equal(t, []string{framework.Base(r.q.Path)}, children(t, obs, "/qx"))
}
