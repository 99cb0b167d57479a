package cache_test

// Interop with the real Apache Curator 5.4, driven through the Java Agent
// of internal/curator: what Curator writes (persistent nodes, an
// ephemeral, a protected ephemeral-sequential node as its GroupMember and
// PersistentNode make, changes, a recursive delete) the cache sees as the
// server has it.

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

func TestCacheSeesWhatCuratorWrites(t *testing.T) {
	cl := zktest.Standalone(t)
	java := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	c := newClient(t, cl.Addrs())
	hx := func(s string) string { return hex.EncodeToString([]byte(s)) }

	java.Call(t, "node-create /interop/tree/a persistent "+hx("a"), "node-created /interop/tree/a", 30*time.Second)
	ch := newCache(t, c, "/interop/tree", cache.Tree(cache.AnyDepth))
	m := newMirror(t, ch)
	waitAgrees(t, ch, m, c, "tree", cache.AnyDepth)
	n := m.len()

	java.Call(t, "node-create /interop/tree/b/c persistent "+hx("c"), "node-created /interop/tree/b/c", 10*time.Second)
	java.Call(t, "node-create /interop/tree/e ephemeral "+hx("e"), "node-created /interop/tree/e", 10*time.Second)
	made := java.Call(t, "node-create /interop/tree/members/member- protected-ephemeral-sequential "+hx("m"), "node-created", 10*time.Second)
	member := strings.TrimPrefix(made, "node-created ")
	require.True(t, framework.IsProtected(framework.Base(member)), "Curator's protected name: %s", member)
	java.Call(t, "node-set /interop/tree/a "+hx("a2"), "node-set /interop/tree/a 1", 10*time.Second)
	waitAgrees(t, ch, m, c, "tree", cache.AnyDepth)

	got, ok, err := ch.Get(member)
	require.NoError(t, err)
	require.True(t, ok, "the protected member node is in the view")
	assert.Equal(t, "m", string(got.Data))
	assert.NotZero(t, got.Stat.EphemeralOwner, "Curator's session owns it")
	a, _, err := ch.Get("/interop/tree/a")
	require.NoError(t, err)
	assert.Equal(t, "a2", string(a.Data))
	assert.Equal(t, int32(1), a.Stat.Version)

	java.Call(t, "node-delete /interop/tree/b", "node-deleted /interop/tree/b", 10*time.Second)
	waitAgrees(t, ch, m, c, "tree", cache.AnyDepth)
	types := m.nodeEventsSince(n)
	assert.Contains(t, types, "changed /interop/tree/a")
	assert.Contains(t, types, "deleted /interop/tree/b/c")
	assert.Contains(t, types, "deleted /interop/tree/b")

	// Curator's session ends: its ephemerals leave the view.
	java.Call(t, "quit", "bye", 10*time.Second)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, ok, err := ch.Get(member)
		assert.NoError(ct, err)
		assert.False(ct, ok)
		_, ok, _ = ch.Get("/interop/tree/e")
		assert.False(ct, ok)
	}, 30*time.Second, 20*time.Millisecond)
	waitAgrees(t, ch, m, c, "tree", cache.AnyDepth)
}
