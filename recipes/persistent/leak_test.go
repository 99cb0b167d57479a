package persistent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

// Close ends every goroutine of a Node and of a TTLNode, whether the node
// is in place, its link is down, or a Start is still waiting.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	cl := zktest.Standalone(t, zktest.WithSystemProperty("zookeeper.extendedTypesEnabled", "true"))
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	before := testkit.LeakBase()
	for _, state := range []string{"in place", "link down", "start waiting"} {
		t.Run(state, func(t *testing.T) {
			n, err := persistent.New(c, "/pn/leak/x", []byte("x"), persistent.Protected())
			require.NoError(t, err)
			ttl, err := persistent.NewTTL(c, "/pn/leak/ttl", []byte("x"), time.Second)
			require.NoError(t, err)
			sub := n.Subscribe()
			switch state {
			case "start waiting":
				p.Blackhole()
				go func() { _ = n.Start(ctxT(t, time.Minute)) }()
				go func() { _ = ttl.Start(ctxT(t, time.Minute)) }()
			default:
				require.NoError(t, n.Start(ctxT(t, 30*time.Second)))
				require.NoError(t, ttl.Start(ctxT(t, 30*time.Second)))
				if state == "link down" {
					p.Blackhole()
					waitNotInPlace(t, n, persistent.ErrNotInPlace)
				}
			}
			require.NoError(t, n.Close())
			require.NoError(t, ttl.Close())
			for range sub.Changes() {
			}
			p.Heal()
			// The delete of a node made over a link that went down goes on
			// in the client's background until the link is back.
			require.NoError(t, c.Drain(ctxT(t, 30*time.Second)))
			goleak.VerifyNone(t, before...)
		})
	}
}
