package framework_test

import (
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// takeFired takes n events from w, waiting for them until a deadline.
func takeFired(t *testing.T, w *framework.Watches, n int) []framework.Fired {
	t.Helper()
	var out []framework.Fired
	deadline := time.After(waitFor)
	for len(out) < n {
		out = append(out, w.Take()...)
		if len(out) >= n {
			break
		}
		select {
		case <-w.Ready():
		case <-deadline:
			t.Fatalf("%d watch events of %d: %+v", len(out), n, out)
		}
	}
	require.Len(t, out, n, "more events than watches: %+v", out)
	return out
}

// requireNoMore checks that w holds nothing more.
func requireNoMore(t *testing.T, w *framework.Watches) {
	t.Helper()
	assert.Empty(t, w.Take())
}

// Each read given Into delivers its one event to the queue, with the path
// as the caller names it and the kind of read, and returns no channel,
// with or without a namespace.
func TestIntoDeliversEachWatchOnceToTheQueue(t *testing.T) {
	cl := zktest.Standalone(t)
	for _, ns := range namespaces {
		t.Run("ns="+ns, func(t *testing.T) {
			c := newClient(t, cl.Addrs(), nsOption(ns)...)
			mustCreate(t, c, "/w", []byte("a"), framework.WithParents())
			w := framework.NewWatches()
			data, _, ch, err := c.GetW(testCtx(t), "/w", framework.Into(w))
			require.NoError(t, err)
			assert.Equal(t, "a", string(data))
			assert.Nil(t, ch)
			_, _, ch, err = c.ChildrenW(testCtx(t), "/w", framework.Into(w))
			require.NoError(t, err)
			assert.Nil(t, ch)
			ok, _, _, err := c.ExistsW(testCtx(t), "/gone", framework.Into(w))
			require.NoError(t, err)
			assert.False(t, ok)
			_, _, _, err = c.GetW(testCtx(t), "/nope", framework.Into(w))
			require.ErrorIs(t, err, zk.ErrNoNode, "a read that fails sets nothing")

			_, err = c.Set(testCtx(t), "/w", []byte("b"), -1)
			require.NoError(t, err)
			mustCreate(t, c, "/w/k", nil)
			mustCreate(t, c, "/gone", nil)
			mustCreate(t, c, "/nope", nil)
			got := takeFired(t, w, 3)
			sort.Slice(got, func(i, j int) bool { return got[i].Kind < got[j].Kind })
			assert.Equal(t, framework.WatchData, got[0].Kind)
			assert.Equal(t, zk.EventNodeDataChanged, got[0].Type)
			assert.Equal(t, "/w", got[0].Path)
			assert.Equal(t, framework.WatchExists, got[1].Kind)
			assert.Equal(t, zk.EventNodeCreated, got[1].Type)
			assert.Equal(t, "/gone", got[1].Path)
			assert.Equal(t, framework.WatchChildren, got[2].Kind)
			assert.Equal(t, zk.EventNodeChildrenChanged, got[2].Type)
			assert.Equal(t, "/w", got[2].Path)
			// Fired once: a second change finds no watch.
			_, err = c.Set(testCtx(t), "/w", []byte("c"), -1)
			require.NoError(t, err)
			_, _, err = c.Get(testCtx(t), "/w") // the event, had there been one, came before this reply
			require.NoError(t, err)
			requireNoMore(t, w)
		})
	}
}

// A read Into a queue of a node whose watch of that kind, into the same
// queue, waits already reads it and sets no second watch: the change is
// told once. Another queue gets its own, and a read after the watch fired
// sets a new one.
func TestIntoSetsOneWatchPerNodeKindAndQueue(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	mustCreate(t, c, "/one", []byte("a"), framework.WithParents())
	w, other := framework.NewWatches(), framework.NewWatches()
	for range 3 {
		data, _, _, err := c.GetW(testCtx(t), "/one", framework.Into(w))
		require.NoError(t, err)
		assert.Equal(t, "a", string(data))
		ok, _, _, err := c.ExistsW(testCtx(t), "/one", framework.Into(w))
		require.NoError(t, err)
		assert.True(t, ok)
	}
	_, _, _, err := c.GetW(testCtx(t), "/one", framework.Into(other))
	require.NoError(t, err)
	_, err = c.Set(testCtx(t), "/one", []byte("b"), -1)
	require.NoError(t, err)
	got := takeFired(t, w, 2)
	sort.Slice(got, func(i, j int) bool { return got[i].Kind < got[j].Kind })
	assert.Equal(t, framework.WatchData, got[0].Kind)
	assert.Equal(t, framework.WatchExists, got[1].Kind)
	takeFired(t, other, 1)
	_, _, err = c.Get(testCtx(t), "/one") // an event more would have come before this reply
	require.NoError(t, err)
	requireNoMore(t, w)

	data, _, _, err := c.GetW(testCtx(t), "/one", framework.Into(w))
	require.NoError(t, err)
	assert.Equal(t, "b", string(data), "the read after the event, its watch fired")
	_, err = c.Set(testCtx(t), "/one", []byte("c"), -1)
	require.NoError(t, err)
	takeFired(t, w, 1)
}

// A thousand watches into one queue cost no goroutine, namespace or not:
// the client routes them all from the session's one callback.
func TestIntoCostsNoGoroutinePerWatch(t *testing.T) {
	cl := zktest.Standalone(t)
	for _, ns := range namespaces {
		t.Run("ns="+ns, func(t *testing.T) {
			c := newClient(t, cl.Addrs(), nsOption(ns)...)
			mustCreate(t, c, "/many", nil, framework.WithParents())
			const n = 1000
			for i := range n {
				mustCreate(t, c, fmt.Sprintf("/many/n%d", i), nil)
			}
			w := framework.NewWatches()
			before := runtime.NumGoroutine()
			for i := range n {
				_, _, _, err := c.GetW(testCtx(t), fmt.Sprintf("/many/n%d", i), framework.Into(w))
				require.NoError(t, err)
			}
			added := runtime.NumGoroutine() - before
			assert.LessOrEqual(t, added, 5, "goroutines added by %d watches", n)
			for i := range n {
				_, err := c.Set(testCtx(t), fmt.Sprintf("/many/n%d", i), []byte("x"), -1)
				require.NoError(t, err)
			}
			got := takeFired(t, w, n)
			for _, f := range got {
				assert.Equal(t, zk.EventNodeDataChanged, f.Type)
			}
		})
	}
}

// Every watch of a queue still pending when the client closes is told
// EventNotWatching with zk.ErrClosing by the time Close returns.
func TestIntoPendingWatchesEndWithClosingOnClose(t *testing.T) {
	cl := zktest.Standalone(t)
	for _, ns := range namespaces {
		t.Run("ns="+ns, func(t *testing.T) {
			c := newClient(t, cl.Addrs(), nsOption(ns)...)
			mustCreate(t, c, "/w", nil, framework.WithParents())
			w := framework.NewWatches()
			_, _, _, err := c.GetW(testCtx(t), "/w", framework.Into(w))
			require.NoError(t, err)
			_, _, _, err = c.ChildrenW(testCtx(t), "/w", framework.Into(w))
			require.NoError(t, err)
			require.NoError(t, c.Close())
			got := w.Take()
			require.Len(t, got, 2, "Close returned before every watch was told: %+v", got)
			for _, f := range got {
				assert.Equal(t, zk.EventNotWatching, f.Type)
				assert.ErrorIs(t, f.Err, zk.ErrClosing)
				assert.Equal(t, "/w", f.Path)
			}
			_, _, _, err = c.GetW(testCtx(t), "/w", framework.Into(w))
			assert.ErrorIs(t, err, zkrecipes.ErrClosed)
		})
	}
}

// A watch of a queue pending when the session expires is told
// EventNotWatching with zk.ErrSessionExpired.
func TestIntoPendingWatchEndsWithSessionExpired(t *testing.T) {
	cl := zktest.Standalone(t)
	for _, ns := range namespaces {
		t.Run("ns="+ns, func(t *testing.T) {
			c, p := dialFault(t, cl, nsOption(ns)...)
			mustCreate(t, c, "/w", nil, framework.WithParents())
			w := framework.NewWatches()
			_, _, _, err := c.GetW(testCtx(t), "/w", framework.Into(w))
			require.NoError(t, err)
			zktest.ExpireSession(t, p, c.Session().ID)
			got := takeFired(t, w, 1)
			assert.Equal(t, zk.EventNotWatching, got[0].Type)
			assert.ErrorIs(t, got[0].Err, zk.ErrSessionExpired)
			assert.Equal(t, "/w", got[0].Path)
		})
	}
}

// Into(nil) is refused before anything is sent.
func TestIntoNilIsRefused(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, _, _, err := c.GetW(testCtx(t), "/", framework.Into(nil))
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	_, _, _, err = c.ExistsW(testCtx(t), "/", framework.Into(nil))
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
}
