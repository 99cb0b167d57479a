package cache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// A node deleted and made again at the same path between the cache's read
// of it (which finds it missing) and its parent's listing (which finds the
// name again) is read again: the view follows the new node and what is
// under it. Before, the view kept the old node and its children for good,
// with no watch left on the new one (a partitioner's item whose lock
// directory, a container, the server reaped and a member made again: the
// members disagreed on its owner and none took it). The listing is held
// (StallRequestsFrom) until the node is made again; whether the cache sent
// the node's read before it is up to the engine, so each attempt is one
// chance in two at least, and ten attempts are made.
func TestANodeMadeAgainBetweenItsReadAndItsParentsListingIsFollowed(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	client, writer := newClient(t, p.Addrs()), newClient(t, cl.Addrs())
	create(t, writer, "/remade/items", "")
	ch := newCache(t, client, "/remade/items", cache.Tree(2))
	for i := range 10 {
		dir := fmt.Sprintf("/remade/items/d%02d", i)
		create(t, writer, dir+"/old", "old")
		waitHas(t, ch, dir+"/old", true)
		del(t, writer, dir+"/old")
		waitHas(t, ch, dir+"/old", false)
		p.StallRequestsFrom(zktest.OpGetChildren, zktest.OpGetChildren2)
		del(t, writer, dir)
		require.Eventually(t, p.Stalled, 10*time.Second, time.Millisecond, "the cache lists the items")
		create(t, writer, dir+"/new", "new")
		p.Release()
		waitHas(t, ch, dir+"/new", true)
	}
}

// waitHas waits until the cache's view has path, or has not.
func waitHas(t *testing.T, ch *cache.Cache, path string, want bool) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, ok, err := ch.Get(path)
		assert.NoError(ct, err)
		assert.Equal(ct, want, ok, path)
	}, 10*time.Second, 5*time.Millisecond)
}
