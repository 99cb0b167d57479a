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
	t.Skip("issue: goroutines per watched node: today the one member of a partitioner adds 80 goroutines holding 10 items and 2,237 holding 1,000 " +
		"(2.179 per item, bound 0.01); un-skip when watch events reach the recipes through one path per client")
	per, line := testkit.GoroutinesPerWatchedNode(t, "partition", partitionGoroutines(t))
	t.Log(line)
	require.LessOrEqual(t, per, testkit.MaxGoroutinesPerWatchedNode, line)
}
