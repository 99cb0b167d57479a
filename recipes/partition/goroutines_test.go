package partition_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// partitionGoroutines returns a function that starts the one member of a
// partitioner of n items of its own and says how many goroutines it added
// once it holds them all and has settled: its views have read the lock
// nodes it made (a burst of reads, whose goroutines end by themselves)
// and the count stays the same for a while.
func partitionGoroutines(t *testing.T) func(n int) int {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	return func(n int) int {
		items := itemNames(n)
		before := testkit.BusyGoroutines()
		p := start(t, c, fmt.Sprintf("/scale/p%d", n), "only", partition.List(items...), nil)
		require.Eventually(t, func() bool { return len(p.Owned()) == n }, 2*time.Minute, 10*time.Millisecond)
		waitStable(t, items, p)
		return steadyGoroutines(before)
	}
}

// steadyGoroutines is BusyGoroutines beyond before once no request is in
// flight and the count has read the same five times in a row, 50ms apart
// (within 30s): a burst of reads (the views reading the lock nodes the
// member made) has ended, what stays is what the recipe keeps.
func steadyGoroutines(before int) int {
	last, same := -1, 0
	for deadline := time.Now().Add(30 * time.Second); same < 5 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		n := testkit.BusyGoroutines()
		switch {
		case requestsInFlight():
			last, same = -1, 0
		case n == last:
			same++
		default:
			last, same = n, 1
		}
	}
	if same < 5 {
		return testkit.BusyGoroutines() - before // never settled: count it all
	}
	return last - before
}

// requestsInFlight says whether a goroutine waits for a ZooKeeper reply.
func requestsInFlight() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], []byte("go-zookeeper/zk.(*Conn).request("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestPartitionGoroutinesDoNotGrowWithItems: a partitioner costs O(1)
// goroutines whatever it watches and holds
// (testkit.MaxGoroutinesPerWatchedNode): its items' holds are followed by
// one engine.Watcher, and it learns of their ends without a goroutine each.
func TestPartitionGoroutinesDoNotGrowWithItems(t *testing.T) {
	per, line := testkit.GoroutinesPerWatchedNode(t, "partition", partitionGoroutines(t))
	t.Log(line)
	require.LessOrEqual(t, per, testkit.MaxGoroutinesPerWatchedNode, line)
}
