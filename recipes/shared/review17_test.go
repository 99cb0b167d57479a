package shared_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// review17: TrySet is "a compare-and-set on the node's version: it writes
// only if nobody changed the node since the value it is given was read, so
// that read-modify-write loops never lose an update". The node is deleted
// and made again by someone else (version 0 again, another value) after
// previous was read; the follower has not seen it yet (its replies lag).
// TrySet's setData at version 0 applies to the new node, reports success,
// and the other writer's value is overwritten by a write computed from a
// value the node no longer held: a lost update. (Curator's trySetValue has
// the same hole; the set's reply has the Czxid that shows it.)
func TestReview17TrySetAcrossADeleteAndRecreateIsNotASuccess(t *testing.T) {
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

// review17: Subscribe promises "the values read or written from now on,
// beginning with the one held (once Start has read it)". A subscription
// made while Start is finishing (after the follower's first read was
// delivered to the subscriptions there were, before Start marks the value
// started) gets neither that value nor, since the node does not change,
// anything else: it waits for ever with the value held in Get.
func TestReview17ASubscriptionMadeDuringStartGetsTheValueHeld(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	for i := range 20 {
		n, err := shared.NewCount(c, "/shared/sub-during-start", 7)
		require.NoError(t, err)
		var subs []*shared.Subscription[int32]
		done := make(chan error, 1)
		go func() { done <- n.Start(ctxT(t, 30*time.Second)) }()
	spin:
		for {
			select {
			case err := <-done:
				require.NoError(t, err)
				break spin
			default:
				subs = append(subs, n.Subscribe())
			}
		}
		time.Sleep(300 * time.Millisecond) // every value pushed has reached its channel by now
		missed := 0
		for _, s := range subs {
			select {
			case v := <-s.Changes():
				assert.Equal(t, int32(7), v.Value)
			default:
				missed++
			}
			s.Close()
		}
		n.Close()
		require.Zero(t, missed, "round %d: %d of %d subscriptions made during Start never got the value held", i, missed, len(subs))
	}
}
