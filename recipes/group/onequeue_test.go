package group_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A member's view of the group costs the same few goroutines whatever the
// group's size: it stands on one cache, whose watches reach it through
// one queue.
func TestMemberViewOneQueueGoroutinesStayFlat(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	for _, n := range []int{10, 1000} {
		t.Run(fmt.Sprintf("members=%d", n), func(t *testing.T) {
			path := fmt.Sprintf("/flat/%d", n)
			_, err := c.Create(ctxT(t, 30*time.Second), path, nil, framework.WithParents())
			require.NoError(t, err)
			ops := make([]any, 0, n)
			for i := range n {
				ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/m%04d", path, i), Data: []byte("p")})
			}
			for len(ops) > 0 {
				k := min(len(ops), 200)
				_, err := c.Multi(ctxT(t, 30*time.Second), ops[:k]...)
				require.NoError(t, err)
				ops = ops[k:]
			}
			before := testkit.BusyGoroutines()
			m := join(t, c, path, "me", "mine")
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				got, err := m.Members()
				assert.NoError(ct, err)
				assert.Len(ct, got, n+1)
			}, 30*time.Second, 10*time.Millisecond)
			added := testkit.GoroutinesSettled(t, before, 8)
			assert.LessOrEqual(t, added, 8, "goroutines of a member of a group of %d", n+1)
			require.NoError(t, m.Close())
		})
	}
}
