package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A create of a name nobody else makes, retried after its reply was lost,
// finds its own node and succeeds: the caller gets the node it asked for,
// made once, rather than NodeExists for its own write.
func TestUniqueNameCreateWhoseReplyIsLostSucceeds(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := observer(t, cl)
	c, p := dialFault(t, cl)
	mustCreate(t, obs, "/u", nil)
	p.DropRepliesFrom(zktest.OpCreate)
	got := createAsync(testCtx(t), c, "/u/mine", framework.WithMode(framework.Ephemeral), framework.UniqueName())
	require.Eventually(t, func() bool { return exists(t, obs, "/u/mine") }, 30*time.Second, 10*time.Millisecond)
	p.Heal()
	r := <-got
	require.NoError(t, r.err)
	assert.Equal(t, "/u/mine", r.path)
	assert.Equal(t, []string{"mine"}, children(t, obs, "/u"))
}

// A create that gave up while an attempt of it was on its way leaves no
// node once the attempt is out, even when the attempt lands after Create
// returned; Drain waits for that.
func TestUniqueNameCreateThatGivesUpLeavesNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := observer(t, cl)
	c, p := dialFault(t, cl)
	p.StallRequestsFrom(zktest.OpCreate)
	ctx, cancel := context.WithCancel(context.Background())
	got := createAsync(ctx, c, "/late", framework.UniqueName())
	require.Eventually(t, p.Stalled, 30*time.Second, time.Millisecond)
	cancel()
	r := <-got
	require.ErrorIs(t, r.err, context.Canceled)
	p.Release() // the create lands now, after Create returned
	require.NoError(t, c.Drain(testCtx(t)))
	assert.False(t, exists(t, obs, "/late"), "the abandoned create's node was left")
}

func TestUniqueNameRefusesOptionsThatNameTheNodeOtherwise(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	for name, opts := range map[string][]framework.CreateOption{
		"protected":    {framework.Protected()},
		"at most once": {framework.CreateAtMostOnce()},
		"sequential":   {framework.WithMode(framework.EphemeralSequential)},
	} {
		_, err := c.Create(testCtx(t), "/x", nil, append(opts, framework.UniqueName())...)
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument, name)
	}
	assert.Equal(t, []string{"zookeeper"}, children(t, c, "/"), "nothing was sent")
}
