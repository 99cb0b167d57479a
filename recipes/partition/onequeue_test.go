package partition_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// A partitioner's views (its items' lock directories, the members) cost
// the same few goroutines whatever the number of items: an item's watches
// add none (four, each item's directory and lock node, when each watch had
// a goroutine). Its hold adds none either now (an engine.Watcher follows
// the holds; TestPartitionGoroutinesDoNotGrowWithItems holds it to that);
// this bound, two per item, is what the holds cost before.
// Measured with one member holding every item, at 10 items and at 1,000.
func TestPartitionerOneQueueViewGoroutinesStayFlat(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	added := map[int]int{}
	for _, n := range []int{10, 1000} {
		t.Run(fmt.Sprintf("items=%d", n), func(t *testing.T) {
			items := itemNames(n)
			before := testkit.BusyGoroutines()
			p := start(t, c, fmt.Sprintf("/flat/%d", n), "m", partition.List(items...), nil)
			waitStable(t, items, p)
			added[n] = testkit.GoroutinesSettled(t, before, 2*n+20)
			t.Logf("%d items held: %d goroutines added", n, added[n])
		})
	}
	perItem := float64(added[1000]-added[10]) / 990
	assert.LessOrEqual(t, perItem, 2.05, "goroutines per item held beyond the holds' two: %v", added)
}
