package countdown_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A nil context is bad input: every call of the package that takes one
// refuses it with ErrInvalidArgument, sends nothing, and the latch works
// as before.
func TestEveryCallRefusesANilContext(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	l := newLatch(t, c, "/nil/latch", 1)
	before := req.Count(t, "")
	testkit.RefusesNilContext(t, map[string]func() error{
		"TrySetCount": func() error { _, err := l.TrySetCount(nilCtx); return err },
		"CountDown":   func() error { _, err := l.CountDown(nilCtx); return err },
		"Wait":        func() error { return l.Wait(nilCtx) },
		"Count":       func() error { _, err := l.Count(nilCtx); return err },
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")
	assert.False(t, exists(t, c, "/nil/latch"))

	ctx := ctxT(t, 10*time.Second)
	ok, err := l.TrySetCount(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = l.CountDown(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, l.Wait(ctx))
}
