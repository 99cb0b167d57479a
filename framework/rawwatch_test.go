package framework_test

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// The raw watches return what their forwarded counterparts return, with
// go-zookeeper's channel, which fires once, under a namespace too.
func TestRawWatchesReturnTheReadAndFireOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs(), framework.WithNamespace("ns"))
	mustCreate(t, c, "/w", []byte("a"), framework.WithParents())

	data, st, dataW, err := c.GetWRaw(testCtx(t), "/w")
	require.NoError(t, err)
	assert.Equal(t, "a", string(data))
	kids, kst, kidsW, err := c.ChildrenWRaw(testCtx(t), "/w")
	require.NoError(t, err)
	assert.Empty(t, kids)
	assert.Equal(t, st.Czxid, kst.Czxid)
	ok, _, goneW, err := c.ExistsWRaw(testCtx(t), "/gone")
	require.NoError(t, err)
	assert.False(t, ok, "a missing node gets a watch too")

	_, err = c.Set(testCtx(t), "/w", []byte("b"), -1)
	require.NoError(t, err)
	mustCreate(t, c, "/w/k", nil)
	mustCreate(t, c, "/gone", nil)
	assert.Equal(t, zk.EventNodeDataChanged, nextEvent(t, dataW).Type)
	assert.Equal(t, zk.EventNodeChildrenChanged, nextEvent(t, kidsW).Type)
	assert.Equal(t, zk.EventNodeCreated, nextEvent(t, goneW).Type)

	_, _, _, err = c.GetWRaw(testCtx(t), "/nope")
	assert.ErrorIs(t, err, zk.ErrNoNode)
	_, _, _, err = c.ChildrenWRaw(testCtx(t), "bad")
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidPath)
}
