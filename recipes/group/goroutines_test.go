package group_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/group"
)

// memberGoroutines returns a function that writes n other members' nodes
// into a group of its own (persistent: what the view watches, not how they
// joined, is measured), joins it and says how many goroutines the started
// member added.
func memberGoroutines(t *testing.T) func(n int) int {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	return func(n int) int {
		path := fmt.Sprintf("/scale/g%d", n)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("m%04d", i)
		}
		testkit.CreateChildren(t, c, path, ids, func(id string) []byte { return []byte(id) })
		var m *group.Member
		added := testkit.GoroutinesAdded(func() {
			var err error
			m, err = group.New(c, path, "me", nil)
			require.NoError(t, err)
			require.NoError(t, m.Start(ctxT(t, 2*time.Minute)))
		})
		t.Cleanup(func() { _ = m.Close() })
		require.Eventually(t, func() bool {
			ids, err := m.IDs()
			return err == nil && len(ids) == n+1
		}, time.Minute, 10*time.Millisecond)
		return added
	}
}

// TestMemberGoroutinesDoNotGrowWithMembers: a member's view of its group
// costs O(1) goroutines whatever it watches
// (testkit.MaxGoroutinesPerWatchedNode).
func TestMemberGoroutinesDoNotGrowWithMembers(t *testing.T) {
	per, line := testkit.GoroutinesPerWatchedNode(t, "group member", memberGoroutines(t))
	t.Log(line)
	require.LessOrEqual(t, per, testkit.MaxGoroutinesPerWatchedNode, line)
}
