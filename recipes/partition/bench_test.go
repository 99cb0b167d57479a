package partition_test

import (
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
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

// assignSizes are the sizes of partition the Assign benchmarks and
// TestAssignMovesAboutTheIdealShare look at: few items per member and
// many, few members and many.
var assignSizes = []struct{ items, members int }{{60, 3}, {60, 9}, {100, 5}, {1000, 3}, {1000, 9}, {1000, 30}}

// assignMoves returns, for one set of member names, the items a join and a
// leave move from a stable partition, as fractions of the ideal share:
// items/(members+1) for the join, items/members for the leave (the
// leaver's share).
func assignMoves(items, members []string, newcomer string) (join, leave float64) {
	before := partition.Assign(items, members, nil)
	joined := partition.Assign(items, append(append([]string(nil), members...), newcomer), before)
	left := partition.Assign(items, members[1:], before)
	n, m := float64(len(items)), float64(len(members))
	return float64(moved(before, joined)) / (n / (m + 1)), float64(moved(before, left)) / (n / m)
}

// BenchmarkAssignJoin measures Assign alone: the items a join moves from a
// stable partition, as a fraction of the ideal share items/(members+1),
// averaged over member names, and the worst, for a few sizes of partition.
func BenchmarkAssignJoin(b *testing.B) {
	for _, size := range assignSizes {
		b.Run(fmt.Sprintf("items=%d/members=%d", size.items, size.members), func(b *testing.B) {
			items := itemNames(size.items)
			var total, worst float64
			for i := 0; i < b.N; i++ {
				f, _ := assignMoves(items, memberNames(i, size.members), fmt.Sprintf("new-%d", i))
				total += f
				worst = max(worst, f)
			}
			b.ReportMetric(total/float64(b.N), "moved/ideal")
			b.ReportMetric(worst, "worst-moved/ideal")
		})
	}
}

// BenchmarkAssignLeave is BenchmarkAssignJoin for a member leaving: the
// items moved as a fraction of the leaver's share items/members.
func BenchmarkAssignLeave(b *testing.B) {
	for _, size := range assignSizes {
		b.Run(fmt.Sprintf("items=%d/members=%d", size.items, size.members), func(b *testing.B) {
			items := itemNames(size.items)
			var total, worst float64
			for i := 0; i < b.N; i++ {
				_, f := assignMoves(items, memberNames(i, size.members), "")
				total += f
				worst = max(worst, f)
			}
			b.ReportMetric(total/float64(b.N), "moved/ideal")
			b.ReportMetric(worst, "worst-moved/ideal")
		})
	}
}

func memberNames(seed, n int) []string {
	out := make([]string, n)
	for j := range out {
		out[j] = fmt.Sprintf("m%d-%d", seed, j)
	}
	return out
}
