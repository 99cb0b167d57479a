package framework_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// dialFault connects a client through its own proxy so faults hit it alone.
func dialFault(t *testing.T, cl *zktest.Cluster, opts ...framework.Option) (*framework.Client, *zktest.Proxy) {
	t.Helper()
	p := cl.NewProxy()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	opts = append([]framework.Option{framework.WithSessionTimeout(4 * time.Second)}, opts...)
	c, err := framework.Dial(ctx, p.Addrs(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, p
}

func observer(t *testing.T, cl *zktest.Cluster) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, cl.DirectAddrs())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

var (
	children     = testkit.Children
	waitChildren = testkit.WaitChildren
)

type createResult struct {
	path string
	err  error
}

func createAsync(ctx context.Context, c *framework.Client, path string, opts ...framework.CreateOption) <-chan createResult {
	out := make(chan createResult, 1)
	go func() {
		p, err := c.Create(ctx, path, nil, opts...)
		out <- createResult{p, err}
	}()
	return out
}

func TestProtectedCreateFindsTheNodeWhoseReplyWasLost(t *testing.T) {
	for _, mode := range []framework.CreateMode{framework.Persistent, framework.EphemeralSequential} {
		t.Run(map[framework.CreateMode]string{framework.Persistent: "persistent", framework.EphemeralSequential: "ephemeral-sequential"}[mode], func(t *testing.T) {
			cl := zktest.Standalone(t)
			c, p := dialFault(t, cl)
			obs := observer(t, cl)
			_, err := obs.Create(t.Context(), "/p", nil)
			require.NoError(t, err)

			p.DropReplies()
			res := createAsync(t.Context(), c, "/p/node-", framework.WithMode(mode), framework.Protected())
			kids := waitChildren(t, obs, "/p", 1) // the server applied it
			p.Heal()

			r := <-res
			require.NoError(t, r.err)
			assert.Equal(t, "/p/"+kids[0], r.path, "the caller gets the node the lost reply was about")
			assert.True(t, framework.IsProtected(kids[0]))
			assert.Len(t, children(t, obs, "/p"), 1, "exactly one node for this contender")
		})
	}
}

func TestProtectedCreateThatFailsLeavesNothingBehind(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl)
	obs := observer(t, cl)
	_, err := obs.Create(t.Context(), "/gone", nil)
	require.NoError(t, err)

	p.DropReplies()
	// The caller gives up only once the create is applied, however long
	// that takes on a loaded machine.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res := createAsync(ctx, c, "/gone/node", framework.Protected())
	waitChildren(t, obs, "/gone", 1) // applied, reply lost
	cancel()
	r := <-res
	require.ErrorIs(t, r.err, context.Canceled)
	assert.NotEmpty(t, c.PendingDeletes(), "a cleanup is queued")

	p.Heal()
	waitChildren(t, obs, "/gone", 0)
	require.NoError(t, c.Drain(t.Context()))
	assert.Empty(t, c.PendingDeletes())
}

func TestProtectedCreateDeletesItsEphemeralLeftFromAnotherSession(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl)
	obs := observer(t, cl)
	id := uuid.NewString()
	// What a previous, expired session of ours would have left: same prefix,
	// another owner.
	stale, err := obs.Create(t.Context(), "/q/_c_"+id+"-lock-", nil,
		framework.WithMode(framework.EphemeralSequential), framework.WithParents())
	require.NoError(t, err)

	p.DropReplies()
	res := createAsync(t.Context(), c, "/q/lock-", framework.WithMode(framework.EphemeralSequential), framework.WithProtectedID(id))
	waitChildren(t, obs, "/q", 2)
	p.Heal()

	r := <-res
	require.NoError(t, r.err)
	assert.NotEqual(t, stale, r.path)
	kids := waitChildren(t, obs, "/q", 1)
	assert.Equal(t, "/q/"+kids[0], r.path, "the stale node is deleted, ours kept")
	_, st, err := obs.Exists(t.Context(), r.path)
	require.NoError(t, err)
	assert.Equal(t, c.Session().ID, st.EphemeralOwner)
}

func TestGuaranteedDeleteIssuedWhileCutOffCompletesAfterHeal(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl)
	obs := observer(t, cl)
	_, err := c.Create(t.Context(), "/doomed", nil)
	require.NoError(t, err)

	p.Blackhole()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	err = c.Delete(ctx, "/doomed", -1, framework.Guaranteed())
	require.ErrorIs(t, err, zkrecipes.ErrDeferred)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, []string{"/doomed"}, c.PendingDeletes())
	ok, _, err := obs.Exists(t.Context(), "/doomed")
	require.NoError(t, err)
	require.True(t, ok, "nothing reached the server yet")

	p.Heal()
	require.NoError(t, c.Drain(t.Context()))
	ok, _, err = obs.Exists(t.Context(), "/doomed")
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestCloseWaitsForPendingDeletes(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl, framework.WithDrainTimeout(30*time.Second))
	obs := observer(t, cl)
	_, err := c.Create(t.Context(), "/doomed", nil)
	require.NoError(t, err)
	p.Blackhole()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, c.Delete(ctx, "/doomed", -1, framework.Guaranteed()), zkrecipes.ErrDeferred)
	p.Heal()

	require.NoError(t, c.Close())
	ok, _, err := obs.Exists(t.Context(), "/doomed")
	require.NoError(t, err)
	assert.False(t, ok, "Close returned only after the delete was done")
}

func TestCloseAbandonsPendingDeletesAfterDrainTimeoutAndSaysSo(t *testing.T) {
	cl := zktest.Standalone(t)
	var logs testkit.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	c, p := dialFault(t, cl, framework.WithDrainTimeout(0), framework.WithLogger(log))
	obs := observer(t, cl)
	_, err := c.Create(t.Context(), "/kept", nil)
	require.NoError(t, err)
	p.Blackhole()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, c.Delete(ctx, "/kept", -1, framework.Guaranteed()), zkrecipes.ErrDeferred)

	require.NoError(t, c.Close())
	assert.Contains(t, logs.String(), "abandoned")
	assert.Contains(t, logs.String(), "/kept")
	ok, _, err := obs.Exists(t.Context(), "/kept")
	require.NoError(t, err)
	assert.True(t, ok, "an abandoned delete of a persistent node does not happen")
}

func TestDeleteOwnedByDeferredLeavesANodeOfAnotherOwnerAlone(t *testing.T) {
	cl := zktest.Standalone(t)
	c, _ := dialFault(t, cl)
	obs := observer(t, cl)
	_, err := obs.Create(t.Context(), "/theirs", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	_, err = c.Create(t.Context(), "/mine", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)

	require.NoError(t, c.Delete(t.Context(), "/theirs", -1, framework.OwnedBy(c.Session().ID), framework.Deferred()))
	require.NoError(t, c.Delete(t.Context(), "/mine", -1, framework.OwnedBy(c.Session().ID), framework.Deferred()))
	require.NoError(t, c.Drain(t.Context()))
	ok, _, err := obs.Exists(t.Context(), "/theirs")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, _, err = obs.Exists(t.Context(), "/mine")
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestOperationsRetryThroughALinkCut(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl)
	p.Cut()
	_, err := c.Create(t.Context(), "/after-cut", []byte("v"))
	require.NoError(t, err)
	data, _, err := c.Get(t.Context(), "/after-cut")
	require.NoError(t, err)
	assert.Equal(t, "v", string(data))
}
