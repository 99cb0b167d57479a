package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// waitWatched waits until the server holds a data watch on every path
// (four-letter word wchp): the Watcher has read and watched them.
func waitWatched(t *testing.T, cl *zktest.Cluster, paths ...string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		out, err := zktest.FourLetter(cl.Addrs()[0], "wchp", time.Second)
		if !assert.NoError(ct, err) {
			return
		}
		for _, p := range paths {
			assert.Contains(ct, out, p+"\n", "no watch on %s", p)
		}
	}, 10*time.Second, 20*time.Millisecond)
}

// Under the session-only policy a link cut within the session ends no
// hold; a node deleted by someone else during the cut must still end its
// hold once the link is back (the watch set again on reconnect fires).
func TestWatcherDeleteDuringCutSessionOnly(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := testkit.Client(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	other := testkit.Client(t, cl.Addrs())
	w := engine.NewWatcher(c)
	holds := watchedHolds(t, c, w, "/watcher-faults/cut", 4)
	paths := make([]string, len(holds))
	for i, h := range holds {
		paths[i] = h.Path()
	}
	waitWatched(t, cl, paths...)
	p.Blackhole()
	require.NoError(t, other.Delete(testkit.Ctx(t, 10*time.Second), holds[1].Path(), -1))
	p.Heal()
	testkit.WaitClosed(t, holds[1].Done(), 15*time.Second, "the hold whose node was deleted during the cut")
	assert.ErrorIs(t, holds[1].Err(), zkrecipes.ErrNodeDeleted)
	for i, h := range holds {
		if i != 1 {
			assert.NoError(t, h.Err(), "hold %d", i)
		}
	}
	_ = hold.ReleaseAll(holds...)
}

// A Watcher whose session was lost ends every hold with ErrSessionLost,
// and, once they are released, is reused on the client's new session:
// its new holds still learn their node's deletion, and nothing is left
// running.
func TestWatcherReusedAcrossSessions(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := testkit.Client(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	other := testkit.Client(t, cl.Addrs())
	before := testkit.LeakBase()
	w := engine.NewWatcher(c)
	holds := watchedHolds(t, c, w, "/watcher-faults/expire", 5)
	testkit.LoseSession(t, p, c)
	for i, h := range holds {
		testkit.WaitClosed(t, h.Done(), 15*time.Second, fmt.Sprintf("hold %d", i))
		assert.ErrorIs(t, h.Err(), zkrecipes.ErrSessionLost, "hold %d", i)
	}
	for _, h := range holds {
		assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
	}
	// The client's connection may be making its new session meanwhile:
	// its goroutines are not the Watcher's.
	noneLeft(t, c, before)
	again := watchedHolds(t, c, w, "/watcher-faults/expire2", 3)
	waitWatched(t, cl, again[0].Path(), again[1].Path(), again[2].Path())
	require.NoError(t, other.Delete(testkit.Ctx(t, 10*time.Second), again[2].Path(), -1))
	testkit.WaitClosed(t, again[2].Done(), 10*time.Second, "the reused watcher's deleted hold")
	assert.ErrorIs(t, again[2].Err(), zkrecipes.ErrNodeDeleted)
	_ = hold.ReleaseAll(again...)
}

// A hold's Context made after the hold ended is cancelled when Context
// returns: work started under it must not run as if protected.
func TestContextOfAnEndedHoldIsDoneAtOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	h := watchedHolds(t, c, engine.NewWatcher(c), "/watcher-faults/ctx", 1)[0]
	require.NoError(t, h.Release())
	require.Error(t, h.Err())
	for i := range 200 {
		ctx := h.Context(context.Background())
		if ctx.Err() == nil {
			t.Fatalf("call %d: the context of a released hold is not done when Context returns (h.Err: %v)", i, h.Err())
		}
	}
}

// Context called from many goroutines at once while the hold ends: every
// context ends, with the hold's reason.
func TestContextFromManyGoroutines(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	other := testkit.Client(t, cl.Addrs())
	h := watchedHolds(t, c, engine.NewWatcher(c), "/watcher-faults/ctxmany", 1)[0]
	waitWatched(t, cl, h.Path())
	var wg sync.WaitGroup
	ctxs := make(chan context.Context, 400)
	for range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctxs <- h.Context(context.Background())
		}()
	}
	require.NoError(t, other.Delete(testkit.Ctx(t, 10*time.Second), h.Path(), -1))
	wg.Wait()
	close(ctxs)
	for ctx := range ctxs {
		testkit.WaitClosed(t, ctx.Done(), 10*time.Second, "a hold context")
		assert.True(t, errors.Is(context.Cause(ctx), zkrecipes.ErrNodeDeleted), "cause %v", context.Cause(ctx))
	}
	assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
}

// Many holds, each node deleted by someone else as soon as it is granted
// (before or while the Watcher's bounded readers get to it): every one
// learns it.
func TestWatcherManyDeletedAtOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	other := testkit.Client(t, cl.Addrs())
	before := testkit.LeakBase()
	w := engine.NewWatcher(c)
	holds := watchedHolds(t, c, w, "/watcher-faults/many", 60)
	for _, h := range holds {
		require.NoError(t, other.Delete(testkit.Ctx(t, 10*time.Second), h.Path(), -1))
	}
	for i, h := range holds {
		testkit.WaitClosed(t, h.Done(), 10*time.Second, fmt.Sprintf("hold %d", i))
		assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
	}
	for _, h := range holds {
		assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
	}
	// The client's connection may be making its new session meanwhile:
	// its goroutines are not the Watcher's.
	noneLeft(t, c, before)
}

// A Watcher on a client with a namespace: events come back without it.
func TestWatcherWithNamespace(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs(), framework.WithNamespace("ns"))
	other := testkit.Client(t, cl.Addrs())
	w := engine.NewWatcher(c)
	h := watchedHolds(t, c, w, "/watcher-faults/ns", 1)[0]
	waitWatched(t, cl, "/ns"+h.Path())
	require.NoError(t, other.Delete(testkit.Ctx(t, 10*time.Second), "/ns"+h.Path(), -1))
	testkit.WaitClosed(t, h.Done(), 10*time.Second, "the hold whose node was deleted")
	assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
}

// One grant followed twice through one Watcher: both Nodes are told.
func TestWatcherFollowedTwice(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	other := testkit.Client(t, cl.Addrs())
	before := testkit.LeakBase()
	w := engine.NewWatcher(c)
	g, err := engine.Enter(testkit.Ctx(t, 30*time.Second), engine.Request{Client: c, Dir: "/watcher-faults/twice", Name: "lock-", Driver: engine.First(1)})
	require.NoError(t, err)
	a := engine.Follow(c, *g, engine.WithWatcher(w))
	b := engine.Follow(c, *g, engine.WithWatcher(w))
	waitWatched(t, cl, g.Path)
	// One of them goes (forgotten): the other is still told.
	a.Forget(zkrecipes.ErrReleased)
	require.NoError(t, other.Delete(testkit.Ctx(t, 10*time.Second), g.Path, -1))
	testkit.WaitClosed(t, b.Done(), 10*time.Second, "the second node")
	assert.ErrorIs(t, b.Err(), zkrecipes.ErrNodeDeleted)
	b.Forget(zkrecipes.ErrReleased)
	noneLeft(t, c, before)
}

// The client's Close while a Watcher follows many nodes: each ends
// (ErrSessionLost) and nothing of the Watcher is left.
func TestWatcherClientClose(t *testing.T) {
	cl := zktest.Standalone(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), testkit.IdleWorkers())
	c, err := framework.Dial(testkit.Ctx(t, 30*time.Second), cl.Addrs())
	require.NoError(t, err)
	w := engine.NewWatcher(c)
	holds := watchedHolds(t, c, w, "/watcher-faults/close", 30)
	require.NoError(t, c.Close())
	for i, h := range holds {
		select {
		case <-h.Done():
		default:
			t.Fatalf("hold %d still held after Close", i)
		}
		assert.ErrorIs(t, h.Err(), zkrecipes.ErrSessionLost)
		_ = h.Release()
	}
	// A Follow after Close: born ended, nothing started.
	n := engine.Follow(c, engine.Grant{Path: holds[0].Path(), Token: holds[0].Token(), Session: c.Session()}, engine.WithWatcher(w))
	assert.Error(t, n.Err())
	_ = n.Release()
}

// Mutex-like churn: goroutines take and give back nodes through one
// Watcher while another client deletes some; every hold whose node is
// gone ends, none other does, and nothing is left running.
func TestWatcherChurn(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	other := testkit.Client(t, cl.Addrs())
	before := testkit.LeakBase()
	w := engine.NewWatcher(c)
	var wg sync.WaitGroup
	for gi := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 15 {
				dir := fmt.Sprintf("/watcher-faults/churn/g%d", gi)
				g, err := engine.Enter(testkit.Ctx(t, 30*time.Second), engine.Request{Client: c, Dir: dir, Name: "lock-", Driver: engine.First(1)})
				if !assert.NoError(t, err) {
					return
				}
				n := engine.Follow(c, *g, engine.WithWatcher(w))
				h, err := n.NewHold(func(*hold.Hold) error { return n.Release() })
				if !assert.NoError(t, err) {
					return
				}
				if round%3 == 0 {
					assert.NoError(t, other.Delete(testkit.Ctx(t, 10*time.Second), h.Path(), -1))
					select {
					case <-h.Done():
					case <-time.After(10 * time.Second):
						t.Errorf("g%d round %d: deletion of %s never told", gi, round, h.Path())
					}
				} else if round%3 == 1 {
					assert.NoError(t, h.Err())
				}
				_ = h.Release()
			}
		}()
	}
	wg.Wait()
	noneLeft(t, c, before)
}

// Standard policy, two link epochs of one session: holds of the first end
// at its cut and stay followed (not released) while holds of the second
// epoch join the Watcher; releasing the old ones must not unhook the new
// ones from their own loss signal, which a second cut then fires.
func TestWatcherTwoEpochsOneSession(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := faultClient(t, p)
	before := testkit.LeakBase()
	w := engine.NewWatcher(c)
	old := watchedHolds(t, c, w, "/watcher-faults/epoch1", 3)
	first := c.Session()
	p.Cut()
	for i, h := range old {
		testkit.WaitClosed(t, h.Done(), 10*time.Second, fmt.Sprintf("old hold %d", i))
	}
	p.Heal()
	s, err := c.WaitConnected(testkit.Ctx(t, 20*time.Second))
	require.NoError(t, err)
	require.Equal(t, first.ID, s.ID, "the session must survive the cut")
	fresh := watchedHolds(t, c, w, "/watcher-faults/epoch2", 3)
	for _, h := range old {
		assert.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
	}
	for i, h := range fresh {
		assert.NoError(t, h.Err(), "fresh hold %d", i)
	}
	p.Cut()
	for i, h := range fresh {
		testkit.WaitClosed(t, h.Done(), 10*time.Second, fmt.Sprintf("fresh hold %d", i))
		assert.ErrorIs(t, h.Err(), zkrecipes.ErrSuspended)
	}
	p.Heal()
	for _, h := range fresh {
		_ = h.Release()
	}
	noneLeft(t, c, before)
}

// Session-only policy: during a cut, someone else deletes a hold's node and
// makes it again at its path; once the link is back the hold must end
// (the node is not the one granted).
func TestWatcherReOwnedDuringCutSessionOnly(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := testkit.Client(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	other := testkit.Client(t, cl.Addrs())
	w := engine.NewWatcher(c)
	holds := watchedHolds(t, c, w, "/watcher-faults/reowncut", 2)
	waitWatched(t, cl, holds[0].Path(), holds[1].Path())
	p.Blackhole()
	_, err := other.Multi(testkit.Ctx(t, 10*time.Second),
		&zk.DeleteRequest{Path: holds[0].Path(), Version: -1},
		&zk.CreateRequest{Path: holds[0].Path(), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral})
	require.NoError(t, err)
	p.Heal()
	testkit.WaitClosed(t, holds[0].Done(), 15*time.Second, "the hold whose node was made again during the cut")
	assert.ErrorIs(t, holds[0].Err(), zkrecipes.ErrNodeDeleted)
	assert.NoError(t, holds[1].Err())
	_ = hold.ReleaseAll(holds...)
}

// A grant followed through a Watcher after its session's loss signal has
// fired is born lost, and its release leaves nothing running, even while
// the link is still down.
func TestWatcherFollowAfterSignalFired(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := faultClient(t, p)
	before := testkit.LeakBase()
	w := engine.NewWatcher(c)
	g, err := engine.Enter(testkit.Ctx(t, 30*time.Second), engine.Request{Client: c, Dir: "/watcher-faults/born", Name: "lock-", Driver: engine.First(1)})
	require.NoError(t, err)
	live := watchedHolds(t, c, w, "/watcher-faults/bornlive", 1)[0]
	p.Blackhole()
	testkit.WaitClosed(t, g.Session.Suspended, 10*time.Second, "the loss signal")
	n := engine.Follow(c, *g, engine.WithWatcher(w))
	assert.ErrorIs(t, n.Err(), zkrecipes.ErrSuspended)
	_, err = n.NewHold(func(*hold.Hold) error { return n.Release() })
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	testkit.WaitClosed(t, live.Done(), 10*time.Second, "the live hold")
	_ = n.Release()
	_ = live.Release()
	// Nothing of the Watcher's is left while the link is down. The
	// client's workers are not the Watcher's: they keep the releases'
	// deletes until the link is back, and an abandoned read until
	// go-zookeeper gives up on the link.
	goleak.VerifyNone(t, append(before, goleak.IgnoreAnyFunction("github.com/zkrecipes/zkrecipes/framework.(*Client).work"))...)
	// Once it is back, the client's workers are done with them too.
	p.Heal()
	noneLeft(t, c, before)
}

// Re-reads racing releases: another client keeps changing the nodes'
// data (each change is a re-read) while the holder releases them; no
// race, no error but the release's own, nothing left running.
func TestWatcherReReadRacesRelease(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	other := testkit.Client(t, cl.Addrs())
	before := testkit.LeakBase()
	w := engine.NewWatcher(c)
	for round := range 10 {
		holds := watchedHolds(t, c, w, fmt.Sprintf("/watcher-faults/race%d", round), 12, engine.WithRevocable())
		var wg sync.WaitGroup
		for _, h := range holds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 {
					_, _ = other.Set(context.Background(), h.Path(), []byte("x"), -1)
				}
			}()
		}
		for _, h := range holds {
			assert.NoError(t, h.Release())
		}
		wg.Wait()
	}
	noneLeft(t, c, before)
}

// A server restarted under a Watcher's holds (a session that outlives it,
// session-only policy): the holds stay trusted, and the Watcher still
// follows their nodes afterwards, the watches set again on the new
// connection: a node deleted by someone else then ends its hold alone.
func TestWatcherFollowsItsNodesAcrossAServerRestart(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs(), framework.WithSessionTimeout(20*time.Second), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	w := engine.NewWatcher(c)
	holds := watchedHolds(t, c, w, "/watcher-faults/restart", 3)
	waitWatched(t, cl, holds[0].Path(), holds[1].Path(), holds[2].Path())
	s := c.Session()

	cl.Server(1).Restart()
	_, err := c.WaitConnected(testkit.Ctx(t, 30*time.Second))
	require.NoError(t, err)
	require.Equal(t, s.ID, c.Session().ID, "the session outlived the restart")
	waitWatched(t, cl, holds[0].Path(), holds[1].Path(), holds[2].Path())

	other := testkit.Client(t, cl.Addrs())
	require.NoError(t, other.Delete(testkit.Ctx(t, 10*time.Second), holds[1].Path(), -1))
	testkit.WaitClosed(t, holds[1].Done(), 10*time.Second, "the deleted node's hold after the restart")
	assert.ErrorIs(t, holds[1].Err(), zkrecipes.ErrNodeDeleted)
	assert.NoError(t, holds[0].Err())
	assert.NoError(t, holds[2].Err())
	_ = hold.ReleaseAll(holds...)
}
