package partition_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// At every size of the benchmarks, over many sets of member names, a join
// and a leave each move at most 1.5 times the ideal share (issue 30): a
// join the newcomer's share and nothing else, a leave the leaver's items.
func TestAssignMovesAboutTheIdealShare(t *testing.T) {
	for _, size := range assignSizes {
		items := itemNames(size.items)
		var worstJoin, worstLeave float64
		for seed := range 50 {
			join, leave := assignMoves(items, memberNames(seed, size.members), fmt.Sprintf("new-%d", seed))
			worstJoin, worstLeave = max(worstJoin, join), max(worstLeave, leave)
		}
		t.Logf("items=%d members=%d: worst join %.2f, worst leave %.2f of the ideal share", size.items, size.members, worstJoin, worstLeave)
		assert.LessOrEqual(t, worstJoin, 1.5, "join, %d items over %d members", size.items, size.members)
		assert.LessOrEqual(t, worstLeave, 1.5, "leave, %d items over %d members", size.items, size.members)
	}
}

// What Assign answers for given owners, it answers again for any owners on
// the way there (some items moved to their new owners, some given up and
// not taken yet): members acting on the answer, and reading each other's
// moves as they happen, never change their minds.
func TestAssignIsStableOnTheWayToItsAnswer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		items := itemNames(1 + rng.IntN(120))
		members := memberNames(round, 1+rng.IntN(12))
		// Any owners: some items with a member, some with none, some with
		// an id that is not a member.
		owners := map[string]string{}
		for _, it := range items {
			switch k := rng.IntN(len(members) + 2); {
			case k < len(members):
				owners[it] = members[k]
			case k == len(members):
				owners[it] = "gone"
			}
		}
		want := partition.Assign(items, members, owners)
		require.Len(t, want, len(items))
		c := counts(want)
		require.LessOrEqual(t, c[len(c)-1]-c[0], 1, "uneven: %v", c)
		// Its own answer is a fixed point.
		require.Equal(t, want, partition.Assign(items, members, want))
		for range 5 {
			way := map[string]string{}
			for it, m := range owners {
				way[it] = m
			}
			for it, m := range want {
				if way[it] == m {
					continue
				}
				switch rng.IntN(3) {
				case 0:
					way[it] = m
				case 1:
					delete(way, it)
				}
			}
			require.Equal(t, want, partition.Assign(items, members, way), "round %d", round)
		}
	}
}
