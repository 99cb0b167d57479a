package framework_test

import (
	"context"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// namespaces are the two ways a watch is handed over: go-zookeeper's own
// channel, and one forwarded with the namespace taken off the path.
var namespaces = []string{"", "ns"}

func nsOption(ns string) []framework.Option {
	if ns == "" {
		return nil
	}
	return []framework.Option{framework.WithNamespace(ns)}
}

// Each watched read returns the read and a channel that fires once, with
// the path as the caller names it, and is then closed, with or without a
// namespace.
func TestWatchesReturnTheReadAndFireOnceWithTheCallersPath(t *testing.T) {
	cl := zktest.Standalone(t)
	for _, ns := range namespaces {
		t.Run("ns="+ns, func(t *testing.T) {
			c := newClient(t, cl.Addrs(), nsOption(ns)...)
			mustCreate(t, c, "/w", []byte("a"), framework.WithParents())

			data, st, dataW, err := c.GetW(testCtx(t), "/w")
			require.NoError(t, err)
			assert.Equal(t, "a", string(data))
			kids, kst, kidsW, err := c.ChildrenW(testCtx(t), "/w")
			require.NoError(t, err)
			assert.Empty(t, kids)
			assert.Equal(t, st.Czxid, kst.Czxid)
			ok, _, goneW, err := c.ExistsW(testCtx(t), "/gone")
			require.NoError(t, err)
			assert.False(t, ok, "a missing node gets a watch too")

			_, err = c.Set(testCtx(t), "/w", []byte("b"), -1)
			require.NoError(t, err)
			mustCreate(t, c, "/w/k", nil)
			mustCreate(t, c, "/gone", nil)
			for _, w := range []struct {
				ch   <-chan zk.Event
				typ  zk.EventType
				path string
			}{
				{dataW, zk.EventNodeDataChanged, "/w"},
				{kidsW, zk.EventNodeChildrenChanged, "/w"},
				{goneW, zk.EventNodeCreated, "/gone"},
			} {
				ev := nextEvent(t, w.ch)
				assert.Equal(t, w.typ, ev.Type)
				assert.Equal(t, w.path, ev.Path)
				requireEnded(t, w.ch)
			}

			_, _, _, err = c.GetW(testCtx(t), "/nope")
			assert.ErrorIs(t, err, zk.ErrNoNode)
			_, _, _, err = c.ChildrenW(testCtx(t), "bad")
			assert.ErrorIs(t, err, zkrecipes.ErrInvalidPath)
		})
	}
}

// A watch still pending when the client closes ends with EventNotWatching
// whose Err is zk.ErrClosing, by the time Close returns, with or without a
// namespace; one whose ctx ended first leaves nothing running behind.
func TestPendingWatchEndsWithClosingOnClose(t *testing.T) {
	cl := zktest.Standalone(t)
	for _, ns := range namespaces {
		t.Run("ns="+ns, func(t *testing.T) {
			c := newClient(t, cl.Addrs(), nsOption(ns)...)
			mustCreate(t, c, "/w", nil)
			_, _, ch, err := c.GetW(testCtx(t), "/w")
			require.NoError(t, err)
			abandoned, cancel := context.WithCancel(testCtx(t))
			_, _, _, err = c.ExistsW(abandoned, "/w")
			require.NoError(t, err)
			cancel()
			require.NoError(t, c.Close())
			select {
			case ev := <-ch:
				assert.Equal(t, zk.EventNotWatching, ev.Type)
				assert.ErrorIs(t, ev.Err, zk.ErrClosing)
				assert.Equal(t, "/w", ev.Path)
			default:
				t.Fatal("Close returned before the watch was told")
			}
			requireEnded(t, ch)
		})
	}
}

// A watch pending when the session expires ends with EventNotWatching
// whose Err is zk.ErrSessionExpired, with or without a namespace.
func TestPendingWatchEndsWithSessionExpired(t *testing.T) {
	cl := zktest.Standalone(t)
	for _, ns := range namespaces {
		t.Run("ns="+ns, func(t *testing.T) {
			c, p := dialFault(t, cl, nsOption(ns)...)
			mustCreate(t, c, "/w", nil, framework.WithParents())
			_, _, ch, err := c.GetW(testCtx(t), "/w")
			require.NoError(t, err)
			zktest.ExpireSession(t, p, c.Session().ID)
			ev := nextEvent(t, ch)
			assert.Equal(t, zk.EventNotWatching, ev.Type)
			assert.ErrorIs(t, ev.Err, zk.ErrSessionExpired)
			assert.Equal(t, "/w", ev.Path)
			requireEnded(t, ch)
		})
	}
}
