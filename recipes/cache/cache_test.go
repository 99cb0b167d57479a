package cache_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// waitTypes waits until the node events after the n-th event are want.
func waitTypes(t *testing.T, m *mirror, n int, want ...string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.Equal(ct, want, m.nodeEventsSince(n))
	}, 30*time.Second, 10*time.Millisecond)
}

func TestSingleReportsCreateChangeDeleteOfItsNode(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	ch := newCache(t, c, "/single/node", cache.Single())
	m := newMirror(t, ch)
	waitTypes(t, m, 0)
	_, ok, err := ch.Get("/single/node")
	require.NoError(t, err)
	assert.False(t, ok, "missing: an empty view")

	create(t, c, "/single/node", "a")
	waitTypes(t, m, 0, "created /single/node")
	set(t, c, "/single/node", "b")
	waitTypes(t, m, 0, "created /single/node", "changed /single/node")
	got, ok, err := ch.Get("/single/node")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "b", string(got.Data))
	assert.Equal(t, int32(1), got.Stat.Version)

	create(t, c, "/single/node/kid", "") // not in a single node's view
	del(t, c, "/single/node")
	waitTypes(t, m, 0, "created /single/node", "changed /single/node", "deleted /single/node")
	waitAgrees(t, ch, m, c, "single", 0)
}

func TestChildrenReportsCreateChangeDeleteOfChildrenOnly(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	create(t, c, "/kids/a", "1")
	ch := newCache(t, c, "/kids", cache.Children())
	m := newMirror(t, ch)
	waitAgrees(t, ch, m, c, "children", 1)
	n := m.len()

	create(t, c, "/kids/b", "2")
	waitTypes(t, m, n, "created /kids/b")
	set(t, c, "/kids/a", "1'")
	waitTypes(t, m, n, "created /kids/b", "changed /kids/a")
	create(t, c, "/kids/a/deeper", "")      // below the depth
	set(t, c, "/kids", "the parent's data") // not in the view
	del(t, c, "/kids/a")
	waitTypes(t, m, n, "created /kids/b", "changed /kids/a", "deleted /kids/a")
	kids, err := ch.Children("/kids")
	require.NoError(t, err)
	require.Len(t, kids, 1)
	assert.Equal(t, "/kids/b", kids[0].Path)
	waitAgrees(t, ch, m, c, "children", 1)

	// The path itself goes, and comes back.
	del(t, c, "/kids")
	waitTypes(t, m, n, "created /kids/b", "changed /kids/a", "deleted /kids/a", "deleted /kids/b")
	create(t, c, "/kids/c", "3")
	waitTypes(t, m, n, "created /kids/b", "changed /kids/a", "deleted /kids/a", "deleted /kids/b", "created /kids/c")
	waitAgrees(t, ch, m, c, "children", 1)
}

func TestTreeReportsCreateChangeDeleteDownToItsDepth(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	create(t, c, "/tree/a/b", "ab")
	ch := newCache(t, c, "/tree", cache.Tree(2))
	m := newMirror(t, ch)
	waitAgrees(t, ch, m, c, "tree", 2)
	assert.Equal(t, []string{"/tree", "/tree/a", "/tree/a/b"}, paths(t, ch))
	n := m.len()

	create(t, c, "/tree/a/b/c", "too deep")
	create(t, c, "/tree/x", "x")
	waitTypes(t, m, n, "created /tree/x")
	set(t, c, "/tree/a/b", "ab'")
	waitTypes(t, m, n, "created /tree/x", "changed /tree/a/b")
	set(t, c, "/tree", "root")
	waitTypes(t, m, n, "created /tree/x", "changed /tree/a/b", "changed /tree")
	del(t, c, "/tree/a")
	waitTypes(t, m, n, "created /tree/x", "changed /tree/a/b", "changed /tree", "deleted /tree/a/b", "deleted /tree/a")
	waitAgrees(t, ch, m, c, "tree", 2)
}

// A node deleted and made again between two reads is a delete and a
// create, never a change, even at the same version.
func TestNodeMadeAgainIsDeleteThenCreate(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	create(t, c, "/again/n", "same")
	ch := newCache(t, c, "/again", cache.Children())
	m := newMirror(t, ch)
	waitAgrees(t, ch, m, c, "children", 1)
	n := m.len()
	// In one step: no read can fall between the delete and the create.
	_, err := c.Multi(ctxT(t, 10*time.Second),
		&zk.DeleteRequest{Path: "/again/n", Version: -1},
		&zk.CreateRequest{Path: "/again/n", Data: []byte("same")})
	require.NoError(t, err)
	waitTypes(t, m, n, "deleted /again/n", "created /again/n")
	waitAgrees(t, ch, m, c, "children", 1)
}

func paths(t *testing.T, ch *cache.Cache) []string {
	t.Helper()
	nodes, err := ch.Nodes()
	require.NoError(t, err)
	var out []string
	for _, n := range nodes {
		out = append(out, n.Path)
	}
	return out
}
