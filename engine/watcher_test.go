package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// noneLeft checks that nothing started since before (testkit.LeakBase)
// still runs, once the client's background deletes of the released nodes
// are done: those are the client's, not the Watcher's.
func noneLeft(t *testing.T, c *framework.Client, before []goleak.Option) {
	t.Helper()
	require.NoError(t, c.Drain(testkit.Ctx(t, 30*time.Second)), "the releases' deletes")
	goleak.VerifyNone(t, before...)
}

// watchedHolds grants n nodes on c, one per directory under dir, each
// followed through w (and opts), and returns a hold of each.
func watchedHolds(t *testing.T, c *framework.Client, w *engine.Watcher, dir string, n int, opts ...engine.Option) []*hold.Hold {
	t.Helper()
	out := make([]*hold.Hold, n)
	for i := range out {
		g, err := engine.Enter(testkit.Ctx(t, 30*time.Second), engine.Request{Client: c, Dir: fmt.Sprintf("%s/d%03d", dir, i), Name: "lock-", Driver: engine.First(1)})
		require.NoError(t, err)
		node := engine.Follow(c, *g, append([]engine.Option{engine.WithWatcher(w)}, opts...)...)
		h, err := node.NewHold(func(*hold.Hold) error { return node.Release() })
		require.NoError(t, err)
		out[i] = h
	}
	return out
}

// Nodes followed by one Watcher each learn that someone else deleted
// their node, and only theirs: the one whose node is gone ends with
// zkrecipes.ErrNodeDeleted, at once, while the others stay held. Once
// every hold is released, nothing of the Watcher is left running.
func TestWatcherTellsEachNodeDeletedBySomeoneElse(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	other := testkit.Client(t, cl.Addrs())
	before := testkit.LeakBase()
	w := engine.NewWatcher(c)
	holds := watchedHolds(t, c, w, "/watcher/deleted", 20)
	for _, victim := range []int{3, 11} {
		// Its node was read and watched: a delete now must reach it.
		require.NoError(t, other.Delete(testkit.Ctx(t, 10*time.Second), holds[victim].Path(), -1))
		testkit.WaitClosed(t, holds[victim].Done(), 10*time.Second, "the hold whose node was deleted")
		assert.ErrorIs(t, holds[victim].Err(), zkrecipes.ErrNodeDeleted)
	}
	for i, h := range holds {
		if i != 3 && i != 11 {
			assert.NoError(t, h.Err(), "hold %d", i)
		}
	}
	for i, h := range holds {
		err := h.Release()
		if i == 3 || i == 11 {
			assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
		} else {
			assert.NoError(t, err)
		}
	}
	noneLeft(t, c, before)
}

// A node deleted and made again at its path by another session is not the
// node granted: the hold ends, as it would following the node itself.
func TestWatcherTellsANodeReOwnedBySomeoneElse(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	other := testkit.Client(t, cl.Addrs())
	w := engine.NewWatcher(c)
	h := watchedHolds(t, c, w, "/watcher/reowned", 1)[0]
	ops := []any{
		&zk.DeleteRequest{Path: h.Path(), Version: -1},
		&zk.CreateRequest{Path: h.Path(), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
	}
	_, err := other.Multi(testkit.Ctx(t, 10*time.Second), ops...)
	require.NoError(t, err)
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the hold whose node was made again")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
	assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
	// The other session's node is left alone.
	ok, _, err := other.Exists(testkit.Ctx(t, 10*time.Second), h.Path())
	require.NoError(t, err)
	assert.True(t, ok, "the release deleted another session's node")
}

// Every node a Watcher follows learns of the loss signal, before the
// server can expire the session: a cut link ends them all with
// zkrecipes.ErrSuspended.
func TestWatcherEndsEveryNodeOnTheLossSignal(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := faultClient(t, p)
	w := engine.NewWatcher(c)
	holds := watchedHolds(t, c, w, "/watcher/cut", 10)
	p.Blackhole()
	for i, h := range holds {
		testkit.WaitClosed(t, h.Done(), 10*time.Second, fmt.Sprintf("hold %d", i))
		assert.ErrorIs(t, h.Err(), zkrecipes.ErrSuspended, "hold %d", i)
		assert.True(t, cl.SessionAlive(h.SessionID()), "told after its session expired")
	}
	p.Heal()
	for _, h := range holds {
		assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
	}
}

// A revocable node followed by a Watcher sees Curator's revocation
// request, as one following itself does.
func TestWatcherSeesARevocationRequest(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	other := testkit.Client(t, cl.Addrs())
	w := engine.NewWatcher(c)
	holds := watchedHolds(t, c, w, "/watcher/revoke", 2, engine.WithRevocable())
	_, err := other.Set(testkit.Ctx(t, 10*time.Second), holds[1].Path(), []byte(engine.RevokeMessage), -1)
	require.NoError(t, err)
	testkit.WaitClosed(t, holds[1].Revoked(), 10*time.Second, "the revocation request")
	select {
	case <-holds[0].Revoked():
		t.Fatal("a request to another node revoked this one")
	default:
	}
	assert.NoError(t, holds[1].Err(), "a revocation request is not a loss")
	require.NoError(t, hold.ReleaseAll(holds...))
}

// A Watcher of another client is not used: the node follows itself, and
// still learns that its node was deleted.
func TestWatcherOfAnotherClientIsIgnored(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	other := testkit.Client(t, cl.Addrs())
	h := watchedHolds(t, c, engine.NewWatcher(other), "/watcher/another", 1)[0]
	require.NoError(t, other.Delete(context.Background(), h.Path(), -1))
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the hold whose node was deleted")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
	assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
}
