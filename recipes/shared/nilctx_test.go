package shared_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// A nil context is bad input: every call of the package that takes one
// refuses it with ErrInvalidArgument, sends nothing, starts nothing, and
// the value and the count work as before.
func TestEveryCallRefusesANilContext(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	freshValue, err := shared.NewValue(c, "/nil/fresh-value", []byte("seed"))
	require.NoError(t, err)
	t.Cleanup(func() { freshValue.Close() })
	freshCount, err := shared.NewCount(c, "/nil/fresh-count", 1)
	require.NoError(t, err)
	t.Cleanup(func() { freshCount.Close() })
	v := newValue(t, c, "/nil/value", []byte("seed"))
	n := newCount(t, c, "/nil/count", 1)
	vv, err := v.Get()
	require.NoError(t, err)
	nv, err := n.Get()
	require.NoError(t, err)

	var nilCtx context.Context
	before := req.Count(t, "")
	testkit.RefusesNilContext(t, map[string]func() error{
		"Value.Start":  func() error { return freshValue.Start(nilCtx) },
		"Value.Set":    func() error { _, err := v.Set(nilCtx, []byte("x")); return err },
		"Value.TrySet": func() error { _, _, err := v.TrySet(nilCtx, vv, []byte("x")); return err },
		"Count.Start":  func() error { return freshCount.Start(nilCtx) },
		"Count.Set":    func() error { _, err := n.Set(nilCtx, 2); return err },
		"Count.TrySet": func() error { _, _, err := n.TrySet(nilCtx, nv, 2); return err },
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")
	ok, _, err := c.Exists(ctxT(t, 10*time.Second), "/nil/fresh-value")
	require.NoError(t, err)
	assert.False(t, ok, "Start made the node")

	ctx := ctxT(t, 10*time.Second)
	require.NoError(t, freshValue.Start(ctx))
	require.NoError(t, freshCount.Start(ctx))
	_, ok, err = v.TrySet(ctx, vv, []byte("x"))
	require.NoError(t, err)
	assert.True(t, ok)
	_, ok, err = n.TrySet(ctx, nv, 2)
	require.NoError(t, err)
	assert.True(t, ok)
}
