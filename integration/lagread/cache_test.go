package lagread_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
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
