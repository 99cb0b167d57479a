package persistent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Under a namespace the node's watch is forwarded by a goroutine that ends
// with the watch's ctx: the keeper must keep that ctx alive while it waits
// on the watch, or a node deleted by someone else is never made again.
func TestNodeDeletedBySomeoneElseIsMadeAgainUnderANamespace(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs(), framework.WithNamespace("app"))
	other := newClient(t, cl.Addrs())
	n := started(t, c, "/pn/nsdel/x", []byte("d"))
	first := n.Status()
	require.True(t, first.InPlace)

	require.NoError(t, other.Delete(ctxT(t, 10*time.Second), "/app/pn/nsdel/x", -1))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, stat := onServer(t, other, "/app/pn/nsdel/x")
		if assert.NotNil(ct, stat, "not made again") {
			assert.Greater(ct, stat.Czxid, first.Czxid)
		}
	}, 15*time.Second, 20*time.Millisecond)
}
