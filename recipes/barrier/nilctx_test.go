package barrier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

// noPanic runs f and turns a panic into an error, so that one bad call
// fails its row instead of the whole run.
func noPanic(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// A nil context is bad input: every call that takes one refuses it with
// an error naming the recipe and path that wraps
// zkrecipes.ErrInvalidArgument, sends nothing, and leaves the barrier as
// usable as before.
func TestNilContextIsRefusedBeforeAnythingIsSent(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	b := newBarrier(t, c, "/b/nilctx/gate")
	d := newDouble(t, c, "/b/nilctx/double", 1)
	entered := newDouble(t, c, "/b/nilctx/entered", 1)
	require.NoError(t, entered.Enter(ctxT(t, 10*time.Second)))

	var nilCtx context.Context
	calls := map[string]struct {
		call func() error
		want string
	}{
		"Set":                 {func() error { return b.Set(nilCtx) }, "barrier /b/nilctx/gate: "},
		"Remove":              {func() error { return b.Remove(nilCtx) }, "barrier /b/nilctx/gate: "},
		"Wait":                {func() error { return b.Wait(nilCtx) }, "barrier /b/nilctx/gate: "},
		"Enter":               {func() error { return d.Enter(nilCtx) }, "double barrier /b/nilctx/double: "},
		"Leave while entered": {func() error { return entered.Leave(nilCtx) }, "double barrier /b/nilctx/entered: "},
	}
	before := p.Requests()
	for name, row := range calls {
		t.Run(name, func(t *testing.T) {
			err := noPanic(row.call)
			require.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
			assert.Contains(t, err.Error(), row.want)
			assert.Contains(t, err.Error(), "nil context")
		})
	}
	assert.Equal(t, before, p.Requests(), "a call with a nil context sent a request")

	// Usable as before: the member is still entered, the others idle.
	require.NoError(t, b.Set(ctxT(t, 10*time.Second)))
	require.NoError(t, b.Remove(ctxT(t, 10*time.Second)))
	require.NoError(t, b.Wait(ctxT(t, 10*time.Second)))
	require.NoError(t, d.Enter(ctxT(t, 10*time.Second)))
	require.NoError(t, d.Leave(ctxT(t, 10*time.Second)))
	assert.ErrorIs(t, entered.Enter(ctxT(t, 10*time.Second)), barrier.ErrAlreadyEntered)
	require.NoError(t, entered.Leave(ctxT(t, 10*time.Second)))
}
