package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A nil context is bad input: every call of the package that takes one
// refuses it with ErrInvalidArgument, sends nothing, leaves no node, and
// the semaphore works as before.
func TestEveryCallRefusesANilContext(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	s := newSem(t, c, "/nil/sem", 2)
	// A shared count is followed in the background: on a client of its own.
	shared := newShared(t, newClient(t, cl.Addrs()), "/nil/shared", "/nil/count")
	var nilCtx context.Context
	before := req.Count(t, "")
	testkit.RefusesNilContext(t, map[string]func() error{
		"MaxLeases":        func() error { _, err := s.MaxLeases(nilCtx); return err },
		"MaxLeases shared": func() error { _, err := shared.MaxLeases(nilCtx); return err },
		"Acquire":          func() error { _, err := s.Acquire(nilCtx, 1); return err },
		"TryAcquire":       func() error { _, err := s.TryAcquire(nilCtx, 1); return err },
		"Participants":     func() error { _, err := s.Participants(nilCtx); return err },
		"ParticipantNodes": func() error { _, err := s.ParticipantNodes(nilCtx); return err },
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")
	assert.Empty(t, nodes(t, c, "/nil/sem/leases"))
	assert.Empty(t, nodes(t, c, "/nil/sem/locks"))

	ctx := ctxT(t, 10*time.Second)
	leases, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	closeAll(t, leases)
	require.NoError(t, setCount(ctx, c, "/nil/count", 3))
	require.Eventually(t, func() bool {
		n, err := shared.MaxLeases(ctx)
		return err == nil && n == 3
	}, 10*time.Second, 10*time.Millisecond)
}
