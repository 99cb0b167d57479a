package partition_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// The acquires and the workers run on the client's workers, which run one
// task after another (the most recently idle first), while each item's
// lock is a Mutex, reentrant per goroutine: a goroutine that took an item
// and went back to the pool must not be handed the node it took again
// when the item is lost and taken anew. Every grant is a node of its own,
// alone in the item's lock directory.
func TestAnItemTakenAgainGetsANodeOfItsOwnEachTime(t *testing.T) {
	cl := zktest.Standalone(t)
	admin := newClient(t, cl.Addrs())
	c := newClient(t, cl.Addrs())
	ctx := ctxT(t, 60*time.Second)
	items := itemNames(3)
	for _, it := range items {
		_, err := admin.Create(ctx, "/part/reuse-jobs/"+it, nil, framework.WithParents())
		require.NoError(t, err)
	}
	p := start(t, c, "/part/reuse", "m", partition.ChildrenOf("/part/reuse-jobs"), nil,
		partition.WithWorker(func(ctx context.Context, _ string, _ *hold.Hold) { <-ctx.Done() }))
	waitStable(t, items, p)
	sub := p.Subscribe()
	defer sub.Close()
	next := func(item string, kind partition.Kind) *hold.Hold {
		t.Helper()
		select {
		case ev := <-sub.Changes():
			require.Equal(t, item, ev.Item)
			require.Equal(t, kind, ev.Kind, "%s: %v", item, ev.Err)
			return ev.Hold
		case <-time.After(30 * time.Second):
			require.FailNow(t, "no event", "%s %v", item, kind)
			return nil
		}
	}
	tokens := map[int64]string{}
	check := func(item string, h *hold.Hold) {
		t.Helper()
		require.NoError(t, h.Err())
		if prev, ok := tokens[h.Token()]; ok {
			require.FailNow(t, "a node granted twice", "%s got token %d, granted before to %s", item, h.Token(), prev)
		}
		tokens[h.Token()] = item
		assert.Equal(t, []string{framework.Base(h.Path())}, testkit.Children(t, c, partition.ItemPath("/part/reuse", item)))
	}
	held := map[string]*hold.Hold{}
	for _, it := range items {
		held[it] = next(it, partition.Acquired)
		check(it, held[it])
	}
	// A hold whose node is deleted is lost, its item still this member's:
	// taken again on the same Mutex, likely on the worker that took it.
	for range 5 {
		for _, it := range items {
			require.NoError(t, admin.Delete(ctx, held[it].Path(), -1))
			next(it, partition.Lost)
			held[it] = next(it, partition.Acquired)
			check(it, held[it])
		}
	}
}
