package persistent_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

func ttlCluster(t *testing.T) *zktest.Cluster {
	return zktest.Standalone(t,
		zktest.WithSystemProperty("zookeeper.extendedTypesEnabled", "true"),
		zktest.WithContainerCheck(100*time.Millisecond))
}

// Curator's PersistentTtlNode layout: a container at the path with the
// data, a TTL child "touch" under it. Once nobody touches the child, the
// server deletes it after the TTL, then the empty container.
func TestTTLNodeIsAContainerWithATouchedChildAndGoesAfterClose(t *testing.T) {
	cl := ttlCluster(t)
	c := newClient(t, cl.Addrs())
	observer := newClient(t, cl.Addrs())
	n, err := persistent.NewTTL(c, "/pn/ttl/x", []byte("t"), 500*time.Millisecond)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	require.NoError(t, n.Start(ctxT(t, 30*time.Second)))
	data, st := onServer(t, observer, "/pn/ttl/x")
	require.NotNil(t, st)
	assert.Equal(t, "t", string(data))
	assert.Equal(t, []string{"touch"}, testkit.WaitChildren(t, observer, "/pn/ttl/x", 1))

	// Touched: still there well past the TTL.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		_, st := onServer(t, observer, "/pn/ttl/x/touch")
		require.NotNil(t, st, "the touched child went")
		time.Sleep(100 * time.Millisecond) // sampling interval over a fixed span
	}

	require.NoError(t, n.Close())
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, st := onServer(t, observer, "/pn/ttl/x")
		assert.Nil(ct, st, "the container outlived its child")
	}, 30*time.Second, 50*time.Millisecond)
}

// A node made WithTTL that nobody changes is reaped by the server after
// its TTL, and made again by the Node (so it is a TTL node, and the Node
// follows the server's deletes as anyone's).
func TestTTLModeNodeIsMadeAgainAfterTheServerReapsIt(t *testing.T) {
	cl := ttlCluster(t)
	c := newClient(t, cl.Addrs())
	observer := newClient(t, cl.Addrs())
	n := started(t, c, "/pn/ttlmode/x", []byte("m"), persistent.WithTTL(300*time.Millisecond))
	first := n.Status()
	// The server reports no owner for a TTL node (its ephemeralOwner field
	// carries the TTL, which the server hides from clients).
	assert.Zero(t, first.Owner)
	st := waitInPlace(t, n, observer, first.Czxid, "m")
	assert.Equal(t, first.Path, st.Path)
}

// noTTLCluster is a server without extended types: it refuses TTL nodes.
func noTTLCluster(t *testing.T) *zktest.Cluster {
	return zktest.Standalone(t, zktest.WithSystemProperty("zookeeper.extendedTypesEnabled", "false"))
}

// refusesTTL checks err is the typed refusal of a server without TTL
// nodes, naming the setting that enables them.
func refusesTTL(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, errors.ErrUnsupported)
	assert.ErrorIs(t, err, zkrecipes.ErrUnsupported)
	assert.Contains(t, err.Error(), "zookeeper.extendedTypesEnabled=true")
}

// On a server that refuses TTL nodes, a Node made WithTTL fails its Start
// at once, saying why, and leaves nothing behind (not even the parents it
// would have made).
func TestTTLModeNodeOnAServerWithoutTTLFailsAtOnceAndLeavesNothing(t *testing.T) {
	cl := noTTLCluster(t)
	c := newClient(t, cl.Addrs())
	n, err := persistent.New(c, "/pn/nottl/a/x", []byte("m"), persistent.WithTTL(time.Minute))
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	start := time.Now()
	refusesTTL(t, n.Start(ctxT(t, 30*time.Second)))
	assert.Less(t, time.Since(start), 5*time.Second, "Start retried the refusal")
	_, st := onServer(t, c, "/pn/nottl")
	assert.Nil(t, st, "left behind")
}

// On a server that refuses TTL nodes, a TTLNode fails its Start at once,
// saying why, and leaves nothing behind: no container, which the server
// would never reap (a container that never had a child stays).
func TestTTLNodeOnAServerWithoutTTLFailsAtOnceAndLeavesNothing(t *testing.T) {
	cl := noTTLCluster(t)
	c := newClient(t, cl.Addrs())
	n, err := persistent.NewTTL(c, "/pn/nottlnode/x", []byte("t"), time.Minute)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	start := time.Now()
	refusesTTL(t, n.Start(ctxT(t, 30*time.Second)))
	assert.Less(t, time.Since(start), 5*time.Second, "Start retried the refusal")
	require.NoError(t, n.Close())
	_, st := onServer(t, c, "/pn/nottlnode")
	assert.Nil(t, st, "left behind")
}
