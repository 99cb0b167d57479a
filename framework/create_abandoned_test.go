package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A protected create whose caller gives up while an attempt is still on
// its way must leave nothing behind, even when that attempt sends its
// create after the cleanup could first have looked. The chaos suite found
// this as a node of a live session blocking a mutex's queue for a minute
// and a half: a retried create, abandoned across a server restart, landing
// late.
//
// The attempt makes the parents first: a create (no parent), then, bottom
// up, /abandoned/deep (no parent), /abandoned, /abandoned/deep again, and
// the create once more. Past the create of /abandoned it looks at its
// context no more, so the caller gives up as soon as that request is on
// the wire: the node's create still goes out two round trips later. Replies
// lag, so that a cleanup that did not wait for the attempt would have
// listed the empty directory (a sync, then a list: two round trips from the
// caller's return) before the create arrived.
func TestAbandonedProtectedCreateLeavesNoNode(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, p.Addrs(), framework.WithSessionTimeout(4*time.Second))
	require.NoError(t, err)
	defer c.Close()
	obs, err := framework.Dial(ctx, cl.Addrs())
	require.NoError(t, err)
	defer obs.Close()

	const lag = 300 * time.Millisecond // a round trip; well under the receive timeout
	p.LagReplies(lag)
	defer p.Heal()
	parents := p.RequestsOf(zktest.OpCreateContainer)
	attempt, giveUp := context.WithCancel(ctx)
	defer giveUp()
	created := make(chan error, 1)
	go func() {
		_, err := c.Create(attempt, "/abandoned/deep/lock-", []byte("x"),
			framework.WithMode(framework.EphemeralSequential), framework.WithParentContainers(), framework.Protected())
		created <- err
	}()
	require.Eventually(t, func() bool { return p.RequestsOf(zktest.OpCreateContainer) >= parents+2 },
		30*time.Second, time.Millisecond, "the attempt never created /abandoned")
	giveUp()
	require.ErrorIs(t, <-created, context.Canceled)

	require.NoError(t, c.Drain(ctx))
	_, st, err := obs.Exists(ctx, "/abandoned/deep")
	require.NoError(t, err)
	require.NotNil(t, st, "the attempt made its parents")
	require.Zero(t, st.NumChildren, "a node of the abandoned create was left")
	require.Equal(t, int32(2), st.Cversion, "the node was not created, then deleted")
}
