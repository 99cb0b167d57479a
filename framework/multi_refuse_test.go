package framework_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

func TestMultiRefusesContainerAndTTLCreates(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	for _, flags := range []int32{zk.FlagContainer, zk.FlagTTL, zk.FlagPersistentSequentialWithTTL} {
		_, err := c.Multi(testCtx(t), &zk.CreateRequest{Path: "/ok"}, &zk.CreateRequest{Path: "/x", Flags: flags})
		assert.ErrorIs(t, err, zkrecipes.ErrUnsupportedInMulti, "flags %d", flags)
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument, "flags %d", flags)
	}
	assert.False(t, exists(t, c, "/ok"), "nothing was sent")
	assert.False(t, exists(t, c, "/x"))
}

func TestMultiRejectsNilTypedOps(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	for _, op := range []any{(*zk.CreateRequest)(nil), (*zk.DeleteRequest)(nil), (*zk.SetDataRequest)(nil), (*zk.CheckVersionRequest)(nil)} {
		_, err := c.Multi(testCtx(t), &zk.CreateRequest{Path: "/ok"}, op)
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument, "%T", op)
	}
	assert.False(t, exists(t, c, "/ok"))
}

func TestMultiErrorNamesTheFailingOp(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	mustCreate(t, c, "/chk", nil)
	_, err := c.Multi(testCtx(t),
		&zk.CreateRequest{Path: "/new"},
		&zk.CheckVersionRequest{Path: "/chk", Version: 5},
		&zk.CreateRequest{Path: "/new2"},
	)
	require.ErrorIs(t, err, zk.ErrBadVersion)
	var me *framework.MultiOpError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 1, me.Index)
	assert.Equal(t, "/chk", me.Path)
}

// Servers without extended types refuse TTL nodes: the create fails at
// once with errors.ErrUnsupported, naming the setting, and makes nothing,
// not even the parents it was asked to make.
func TestTTLCreateOnServersWithoutTTLIsUnsupported(t *testing.T) {
	cl := zktest.Standalone(t, zktest.WithSystemProperty("zookeeper.extendedTypesEnabled", "false"))
	c := dial(t, cl.Addrs())
	_, err := c.Create(t.Context(), "/nottl/a/b", nil, framework.WithMode(framework.PersistentWithTTL),
		framework.WithTTL(time.Minute), framework.WithParentContainers())
	require.ErrorIs(t, err, zkrecipes.ErrUnsupported)
	assert.ErrorIs(t, err, errors.ErrUnsupported)
	assert.Contains(t, err.Error(), "zookeeper.extendedTypesEnabled=true")
	ok, _, err := c.Exists(t.Context(), "/nottl")
	require.NoError(t, err)
	assert.False(t, ok, "a parent was made")
}
