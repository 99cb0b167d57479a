package partition_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// partitionGoroutines returns a function that starts the one member of a
// partitioner of n items of its own and says how many goroutines it added
// once it holds them all.
func partitionGoroutines(t *testing.T) func(n int) int {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	return func(n int) int {
		var p *partition.Partitioner
		added := testkit.GoroutinesAdded(func() {
			p = start(t, c, fmt.Sprintf("/scale/p%d", n), "only", partition.List(itemNames(n)...), nil)
			require.Eventually(t, func() bool { return len(p.Owned()) == n }, 2*time.Minute, 10*time.Millisecond)
		})
		return added
	}
}

// TestPartitionGoroutinesDoNotGrowWithItems: a partitioner costs O(1)
// goroutines whatever it watches and holds
// (testkit.MaxGoroutinesPerWatchedNode).
func TestPartitionGoroutinesDoNotGrowWithItems(t *testing.T) {
	t.Skip("issue: goroutines per held item: the one member of a partitioner adds 35 goroutines holding 10 items and 2,015 holding 1,000 " +
		"(2.0 per item, bound 0.01): its views' watches cost none now (one queue per cache), what remains is each hold's: hold.Node's " +
		"loss-signal follower and the partitioner's wait on the hold's end; un-skip when a hold follows its node and signal without a goroutine")
	per, line := testkit.GoroutinesPerWatchedNode(t, "partition", partitionGoroutines(t))
	t.Log(line)
	require.LessOrEqual(t, per, testkit.MaxGoroutinesPerWatchedNode, line)
}
