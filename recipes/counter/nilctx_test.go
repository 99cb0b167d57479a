package counter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/retry"
)

// A nil context is bad input: every call of the package that takes one
// refuses it with ErrInvalidArgument, sends nothing, writes nothing, and
// the counters work as before.
func TestEveryCallRefusesANilContext(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	l := newLong(t, c, "/nil/long", counter.WithPromotedToLock("/nil/lock", time.Second, retry.NTimes(1, 0)))
	i, err := counter.NewInteger(c, "/nil/int")
	require.NoError(t, err)
	t.Cleanup(func() { i.Close() })
	v, err := counter.NewBytes(c, "/nil/value")
	require.NoError(t, err)
	t.Cleanup(func() { v.Close() })
	var nilCtx context.Context
	before := req.Count(t, "")
	testkit.RefusesNilContext(t, map[string]func() error{
		"Long.Get":            func() error { _, err := l.Get(nilCtx); return err },
		"Long.Increment":      func() error { _, err := l.Increment(nilCtx); return err },
		"Long.Decrement":      func() error { _, err := l.Decrement(nilCtx); return err },
		"Long.Add":            func() error { _, err := l.Add(nilCtx, 2); return err },
		"Long.Subtract":       func() error { _, err := l.Subtract(nilCtx, 2); return err },
		"Long.CompareAndSet":  func() error { _, err := l.CompareAndSet(nilCtx, 0, 1); return err },
		"Long.Swap":           func() error { _, err := l.Swap(nilCtx, 1); return err },
		"Long.Set":            func() error { return l.Set(nilCtx, 1) },
		"Long.Initialize":     func() error { _, err := l.Initialize(nilCtx, 1); return err },
		"Integer.Increment":   func() error { _, err := i.Increment(nilCtx); return err },
		"Integer.Set":         func() error { return i.Set(nilCtx, 1) },
		"Bytes.Get":           func() error { _, err := v.Get(nilCtx); return err },
		"Bytes.CompareAndSet": func() error { _, err := v.CompareAndSet(nilCtx, nil, []byte("x")); return err },
		"Bytes.Swap":          func() error { _, err := v.Swap(nilCtx, []byte("x")); return err },
		"Bytes.Set":           func() error { return v.Set(nilCtx, []byte("x")) },
		"Bytes.Initialize":    func() error { _, err := v.Initialize(nilCtx, []byte("x")); return err },
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")
	_, ok := raw(t, c, "/nil")
	assert.False(t, ok, "something was written")

	ctx := ctxT(t, 10*time.Second)
	r, err := l.Increment(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.PostValue)
	ri, err := i.Increment(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(1), ri.PostValue)
	rv, err := v.Swap(ctx, []byte("x"))
	require.NoError(t, err)
	assert.True(t, rv.Succeeded)
}
