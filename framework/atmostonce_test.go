package framework_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A create or a delete sent at most once whose reply is lost says so
// (ErrOutcomeUnknown) rather than resending: the write was applied once,
// and nothing of another client's in between is touched.
func TestWriteSentAtMostOnceWhoseReplyIsLostIsOutcomeUnknownAndAppliedOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := observer(t, cl)

	t.Run("create", func(t *testing.T) {
		c, p := dialFault(t, cl)
		mustCreate(t, obs, "/once", nil)
		p.DropRepliesFrom(zktest.OpCreate, zktest.OpCreateContainer)
		got := createAsync(testCtx(t), c, "/once/c", framework.WithParentContainers(), framework.CreateAtMostOnce())
		require.Eventually(t, func() bool { return exists(t, obs, "/once/c") }, 30*time.Second, 10*time.Millisecond)
		// Another client removes it before the reply could have come: a
		// resend would make it again and report success.
		require.NoError(t, obs.Delete(context.Background(), "/once/c", -1))
		p.Heal()
		r := <-got
		assert.ErrorIs(t, r.err, zkrecipes.ErrOutcomeUnknown)
		assert.False(t, exists(t, obs, "/once/c"), "sent again")
	})
	t.Run("delete", func(t *testing.T) {
		c, p := dialFault(t, cl)
		mustCreate(t, obs, "/once-d", nil)
		p.DropRepliesFrom(zktest.OpDelete)
		got := make(chan error, 1)
		go func() { got <- c.Delete(testCtx(t), "/once-d", -1, framework.DeleteAtMostOnce()) }()
		require.Eventually(t, func() bool { return !exists(t, obs, "/once-d") }, 30*time.Second, 10*time.Millisecond)
		// Another client makes it again: a resend would delete that one.
		mustCreate(t, obs, "/once-d", nil)
		p.Heal()
		assert.ErrorIs(t, <-got, zkrecipes.ErrOutcomeUnknown)
		assert.True(t, exists(t, obs, "/once-d"), "sent again: another client's node is gone")
	})
}

// A request that never reached the server is not resent either: the
// caller cannot tell it from a lost reply, and decides.
func TestWriteSentAtMostOnceWhoseRequestIsLostIsOutcomeUnknownAndNeverApplied(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := observer(t, cl)
	c, p := dialFault(t, cl)
	p.DropRequestsFrom(zktest.OpCreate)
	got := createAsync(testCtx(t), c, "/never", framework.CreateAtMostOnce())
	require.Eventually(t, func() bool { return !c.State().IsConnected() }, 30*time.Second, 10*time.Millisecond)
	p.Heal()
	r := <-got
	assert.ErrorIs(t, r.err, zkrecipes.ErrOutcomeUnknown)
	_, _, err := c.Exists(testCtx(t), "/never") // the client is back
	require.NoError(t, err)
	assert.False(t, exists(t, obs, "/never"))
}

// Answers are answers: a create sent at most once reports the server's
// refusals as any create does, and makes missing parents (retried: only
// the node's own create is sent once).
func TestWriteSentAtMostOnceReportsTheServersAnswer(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	p, err := c.Create(testCtx(t), "/a/b/c", []byte("x"), framework.WithParents(), framework.CreateAtMostOnce())
	require.NoError(t, err)
	assert.Equal(t, "/a/b/c", p)
	_, err = c.Create(testCtx(t), "/a/b/c", nil, framework.CreateAtMostOnce())
	assert.ErrorIs(t, err, zk.ErrNodeExists)
	assert.False(t, errors.Is(err, zkrecipes.ErrOutcomeUnknown))
	assert.ErrorIs(t, c.Delete(testCtx(t), "/a/b/c", 7, framework.DeleteAtMostOnce()), zk.ErrBadVersion)
	require.NoError(t, c.Delete(testCtx(t), "/a/b/c", -1, framework.DeleteAtMostOnce()))
	assert.ErrorIs(t, c.Delete(testCtx(t), "/a/b/c", -1, framework.DeleteAtMostOnce()), zk.ErrNoNode)
}

func TestWriteSentAtMostOnceRefusesOptionsThatResend(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, err := c.Create(testCtx(t), "/p", nil, framework.Protected(), framework.CreateAtMostOnce())
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	mustCreate(t, c, "/d", nil)
	assert.ErrorIs(t, c.Delete(testCtx(t), "/d", -1, framework.Guaranteed(), framework.DeleteAtMostOnce()), zkrecipes.ErrInvalidArgument)
	assert.ErrorIs(t, c.Delete(testCtx(t), "/d", -1, framework.WithChildren(), framework.DeleteAtMostOnce()), zkrecipes.ErrInvalidArgument)
	assert.True(t, exists(t, c, "/d"), "nothing was sent")
	assert.ElementsMatch(t, []string{"zookeeper", "d"}, children(t, c, "/"), "the protected create was not sent")
}

func TestValidateRecipePathRefusesTheRoot(t *testing.T) {
	err := framework.ValidateRecipePath("/")
	require.ErrorIs(t, err, zkrecipes.ErrInvalidPath)
	assert.Contains(t, err.Error(), "the root cannot be a recipe's path")
	require.ErrorIs(t, framework.ValidateRecipePath("x"), zkrecipes.ErrInvalidPath, "ValidatePath's refusals too")
	require.NoError(t, framework.ValidateRecipePath("/x/y"))
}
