package lagread_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

// A latch whose term ended with its link (a cut) leads again with its old
// node only if the node is still there and its own. An operator deleted it
// while the link was down, and the next participant leads; back on a
// follower that has not applied the deletion yet, the latch must not lead
// again beside it. Its look after the reconnect reads without a sync, and
// needs none: the follower takes the session back only once the leader
// has answered its revalidation, and the leader's answers reach it after
// every commit sent before them, the deletion included.
func TestLatchOnALaggingFollowerDoesNotLeadAgainWithADeletedNode(t *testing.T) {
	e := newLaggingEnsemble(t)
	l1, err := leader.NewLatch(e.Lagging, "/lag/election", leader.WithParticipantID("lagging"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l1.Close() })
	require.NoError(t, l1.Start(ctxT(t, 30*time.Second)))
	term, err := l1.Await(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	l2, err := leader.NewLatch(e.Leader, "/lag/election", leader.WithParticipantID("next"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l2.Close() })
	require.NoError(t, l2.Start(ctxT(t, 30*time.Second)))
	require.Eventually(t, func() bool {
		ids, err := l1.Participants(ctxT(t, 10*time.Second))
		return err == nil && len(ids) == 2
	}, 10*time.Second, 20*time.Millisecond, "the follower never saw the second participant")
	e.Lag(t)

	// The latch loses its link, and cannot get it back until the node is
	// gone and the next participant leads.
	e.Link.Blackhole()
	e.Link.Cut()
	require.Eventually(t, func() bool { _, held := l1.Held(); return !held }, 10*time.Second, time.Millisecond, "the cut never ended the term")
	require.NoError(t, e.Leader.Delete(ctxT(t, 10*time.Second), term.Path(), -1))
	_, err = l2.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err, "the next participant never led")
	e.Link.Heal()
	assert.Never(t, func() bool { _, held := l1.Held(); return held }, lag+time.Second, time.Millisecond,
		"the latch led again with its deleted node beside the next leader")
}
