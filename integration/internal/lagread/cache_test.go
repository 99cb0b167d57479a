package lagread_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/retry"
)

// A cache that saw changes on the leader, and whose link then moves to a
// follower that has not applied them yet, reads everything again after the
// reconnect: it must not show the older state the follower still has (a
// node it saw made as gone, data it saw changed as it was). Its resync
// syncs the follower with the leader first.
func TestCacheMovedToALaggingFollowerNeverGoesBack(t *testing.T) {
	e := newLaggingEnsemble(t)
	link := e.cl.NewSwitchProxy(e.leader.ID)
	c := dial(t, []string{link.ConnectString()})
	_, err := e.Leader.Create(ctxT(t, 30*time.Second), "/lag/cache/a", []byte("old"), framework.WithParents())
	require.NoError(t, err)
	ch, err := cache.New(c, "/lag/cache", cache.Children())
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	require.NoError(t, ch.Start(ctxT(t, 30*time.Second)))
	sub := ch.Subscribe()
	t.Cleanup(sub.Close)

	e.Lag(t)
	_, err = e.Leader.Set(ctxT(t, 30*time.Second), "/lag/cache/a", []byte("new"), -1)
	require.NoError(t, err)
	_, err = e.Leader.Create(ctxT(t, 30*time.Second), "/lag/cache/b", []byte("b"))
	require.NoError(t, err)
	seen := func() bool {
		a, _, _ := ch.Get("/lag/cache/a")
		_, hasB, _ := ch.Get("/lag/cache/b")
		return string(a.Data) == "new" && hasB
	}
	require.Eventually(t, seen, 10*time.Second, time.Millisecond, "the cache on the leader never saw the writes")

	// To the follower, which applies them lag late.
	link.SwitchTo(e.f.ID)
	link.Cut()
	assert.Never(t, func() bool { return !seen() }, lag+time.Second, time.Millisecond,
		"the view went back to the follower's older state")
	require.Eventually(t, func() bool { return ch.Err() == nil }, 30*time.Second, 10*time.Millisecond)
	assert.True(t, seen())

	// And the stream never reported the older state either.
	view := map[string]string{}
	for done := false; !done; {
		select {
		case ev := <-sub.Changes():
			switch ev.Type {
			case cache.Snapshot, cache.Overflow:
				for _, n := range ev.Nodes {
					view[n.Path] = string(n.Data)
				}
			case cache.Created, cache.Changed:
				view[ev.Node.Path] = string(ev.Node.Data)
			case cache.Deleted:
				delete(view, ev.Node.Path)
			}
			if _, ok := view["/lag/cache/b"]; ok && view["/lag/cache/a"] == "new" {
				// From here on, nothing may take it back.
				done = true
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the stream never showed the writes: %v", view)
		}
	}
	for {
		select {
		case ev := <-sub.Changes():
			assert.NotEqual(t, cache.Deleted, ev.Type, "went back: %v", ev.Node.Path)
			if ev.Type == cache.Changed {
				assert.Equal(t, "new", string(ev.Node.Data), fmt.Sprintf("went back: %s", ev.Node.Path))
			}
		default:
			return
		}
	}
}

// A cache whose session expires while a read of its root is in flight, and
// whose client then gets a new session on a follower that lags behind the
// root's creation, must not report the root gone. After an expiry
// go-zookeeper forgets the last zxid it saw, so nothing refuses that
// follower; with local sessions (localSessionsEnabled) the follower makes
// the new session alone, without catching up through the leader; and the
// framework retries the read there before the cache's resync syncs.
func TestCacheNeverReportsItsRootGoneByANewSessionOnAFollowerBehindIt(t *testing.T) {
	const lagLong = 6 * time.Second
	// 50 ticks of 200ms: the leader must not drop the follower for the lag.
	cl := zktest.Ensemble(t, 3, zktest.WithPeerProxies(), zktest.WithSyncLimit(50),
		zktest.WithConfig("localSessionsEnabled=true"))
	leader := cl.Leader(30 * time.Second)
	var f *zktest.Server
	for _, s := range cl.Servers() {
		if s.ID != leader.ID {
			f = s
			break
		}
	}
	byLeader := dial(t, []string{leader.DirectAddr()})
	p := cl.NewProxy()
	p.Refuse(f.ID) // on the leader first
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Two servers: go-zookeeper takes them in turn, so the new session after
	// the leader's "expired" is made on f. A retry that waits little, so that
	// the read is retried at once on the new session.
	c, err := framework.Dial(ctx, []string{p.Addrs()[leader.ID-1], p.Addrs()[f.ID-1]},
		framework.WithSessionTimeout(2*time.Second), framework.WithRetryPolicy(retry.UntilElapsed(30*time.Second, 50*time.Millisecond)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	pp := cl.PeerProxy(f.ID, leader.ID)
	pp.LagReplies(lagLong)
	t.Cleanup(pp.Heal)
	created := time.Now()
	_, err = byLeader.Create(ctxT(t, 30*time.Second), "/lagroot", []byte("old"))
	require.NoError(t, err)
	ch, err := cache.New(c, "/lagroot", cache.Single())
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	require.NoError(t, ch.Start(ctxT(t, 30*time.Second)))
	sub := ch.Subscribe()
	t.Cleanup(sub.Close)
	s1 := c.Session().ID

	// A read of the root in flight: held until the link drops.
	p.StallRequestsFrom(zktest.OpGetData)
	_, err = byLeader.Set(ctxT(t, 30*time.Second), "/lagroot", []byte("new"), -1)
	require.NoError(t, err)
	require.Eventually(t, p.Stalled, 10*time.Second, time.Millisecond)
	// No server for the client until the leader has expired its session.
	p.Refuse(leader.ID, f.ID)
	require.Eventually(t, func() bool { return !cl.SessionAlive(s1) }, 20*time.Second, 50*time.Millisecond)
	p.Heal()
	require.Eventually(t, func() bool { id := c.Session().ID; return id != 0 && id != s1 }, 20*time.Second, 10*time.Millisecond)
	require.Less(t, time.Since(created), lagLong, "too slow: f caught up with the root's creation before the new session")

	// Until well after f has caught up, nothing says the root went away.
	// (The cache does not get current again here: ZooKeeper 3.8 leaves a
	// sync of a follower's local session unanswered, and the resync waits
	// for it.)
	deadline := time.After(time.Until(created.Add(lagLong + 2*time.Second)))
	for {
		select {
		case ev := <-sub.Changes():
			require.NotEqual(t, cache.Deleted, ev.Type, "the root reported gone by a follower behind its creation: %v", ev.Node.Path)
		case <-deadline:
			return
		}
	}
}
