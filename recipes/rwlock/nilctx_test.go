package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A nil context is bad input: every call of the package that takes one
// refuses it with ErrInvalidArgument, sends nothing, leaves no node, and
// the lock works as before; a downgrade is refused too.
func TestEveryCallRefusesANilContext(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	l := newRW(t, c, "/nil/rw")
	var nilCtx context.Context
	before := req.Count(t, "")
	testkit.RefusesNilContext(t, map[string]func() error{
		"ReadLock.Acquire":     func() error { _, err := l.ReadLock().Acquire(nilCtx); return err },
		"ReadLock.TryAcquire":  func() error { _, err := l.ReadLock().TryAcquire(nilCtx); return err },
		"WriteLock.Acquire":    func() error { _, err := l.WriteLock().Acquire(nilCtx); return err },
		"WriteLock.TryAcquire": func() error { _, err := l.WriteLock().TryAcquire(nilCtx); return err },
		"Participants":         func() error { _, err := l.Participants(nilCtx); return err },
		"ParticipantNodes":     func() error { _, err := l.ParticipantNodes(nilCtx); return err },
	})
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")
	assert.Empty(t, nodes(t, c, "/nil/rw"))

	// Holding the write lock, a read acquire with a nil context is no
	// downgrade.
	ctx := ctxT(t, 10*time.Second)
	w, err := l.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	_, err = l.ReadLock().Acquire(nilCtx)
	require.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	assert.Len(t, nodes(t, c, "/nil/rw"), 1, "a read node was made")

	r, err := l.ReadLock().Acquire(ctx)
	require.NoError(t, err, "the downgrade works")
	require.NoError(t, w.Release())
	require.NoError(t, r.Release())
	ids, err := l.Participants(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids)
}
