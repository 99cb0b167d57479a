package partition_test

import (
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// BenchmarkJoinMovesItems joins a fourth member to three that share 60
// items, on a real server, and reports the items the join moved as a
// fraction of the ideal share (60/4): moved/ideal, 1 at best; the issue's
// bound is 1.5.
func BenchmarkJoinMovesItems(b *testing.B) {
	cl := zktest.Standalone(b)
	items := itemNames(60)
	var total float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		path := fmt.Sprintf("/bench/join/%d", i)
		var ps []*partition.Partitioner
		for j := range 3 {
			ps = append(ps, start(b, newClient(b, cl.Addrs()), path, fmt.Sprintf("m%d-%d", i, j), partition.List(items...), nil))
		}
		before := waitStable(b, items, ps...)
		ps = append(ps, start(b, newClient(b, cl.Addrs()), path, fmt.Sprintf("new-%d", i), partition.List(items...), nil))
		after := waitStable(b, items, ps...)
		total += float64(moved(before, after)) / (float64(len(items)) / 4)
		for _, p := range ps {
			_ = p.Close()
		}
	}
	b.ReportMetric(total/float64(b.N), "moved/ideal")
}

// BenchmarkAssignJoin measures Assign alone: the items a join moves, as a
// fraction of the ideal share items/(members+1), averaged over member
// names, for a few sizes of partition.
func BenchmarkAssignJoin(b *testing.B) {
	for _, size := range []struct{ items, members int }{{60, 3}, {60, 9}, {100, 5}, {1000, 3}, {1000, 9}, {1000, 30}} {
		b.Run(fmt.Sprintf("items=%d/members=%d", size.items, size.members), func(b *testing.B) {
			items := itemNames(size.items)
			var total, worst float64
			for i := 0; i < b.N; i++ {
				members := make([]string, size.members)
				for j := range members {
					members[j] = fmt.Sprintf("m%d-%d", i, j)
				}
				before := partition.Assign(items, members)
				after := partition.Assign(items, append(members, fmt.Sprintf("new-%d", i)))
				f := float64(moved(before, after)) / (float64(size.items) / float64(size.members+1))
				total += f
				worst = max(worst, f)
			}
			b.ReportMetric(total/float64(b.N), "moved/ideal")
			b.ReportMetric(worst, "worst-moved/ideal")
		})
	}
}
