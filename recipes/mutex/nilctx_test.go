package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A nil context is bad input: every call of the package that takes one,
// and the hold's (Fenced, Context), refuses it with ErrInvalidArgument,
// sends nothing, leaves no node, and the recipes work as before.
func TestEveryCallRefusesANilContext(t *testing.T) {
	cl := zktest.Standalone(t)
	req := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), req.Option())
	m := newMutex(t, c, "/nil/m")
	sm, err := mutex.NewSemaphoreMutex(c, "/nil/sm")
	require.NoError(t, err)
	t.Cleanup(func() { sm.Close() })
	ml, err := mutex.NewMultiLock(newMutex(t, c, "/nil/ml1"), newMutex(t, c, "/nil/ml2"))
	require.NoError(t, err)
	held := newMutex(t, c, "/nil/held")
	h, err := held.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	fencedOp := &zk.CreateRequest{Path: "/nil/fenced"}

	var nilCtx context.Context
	before := req.Count(t, "")
	testkit.RefusesNilContext(t, map[string]func() error{
		"Mutex.Acquire":               func() error { _, err := m.Acquire(nilCtx); return err },
		"Mutex.TryAcquire":            func() error { _, err := m.TryAcquire(nilCtx); return err },
		"Mutex.Participants":          func() error { _, err := m.Participants(nilCtx); return err },
		"Mutex.ParticipantNodes":      func() error { _, err := m.ParticipantNodes(nilCtx); return err },
		"Acquire":                     func() error { _, err := mutex.Acquire(nilCtx, c, "/nil/m"); return err },
		"Participants":                func() error { _, err := mutex.Participants(nilCtx, c, "/nil/m"); return err },
		"ParticipantNodes":            func() error { _, err := mutex.ParticipantNodes(nilCtx, c, "/nil/m"); return err },
		"Revoke":                      func() error { return mutex.Revoke(nilCtx, c, h.Path()) },
		"SemaphoreMutex.Acquire":      func() error { _, err := sm.Acquire(nilCtx); return err },
		"SemaphoreMutex.TryAcquire":   func() error { _, err := sm.TryAcquire(nilCtx); return err },
		"SemaphoreMutex.Participants": func() error { _, err := sm.Participants(nilCtx); return err },
		"SemaphoreMutex.ParticipantNodes": func() error {
			_, err := sm.ParticipantNodes(nilCtx)
			return err
		},
		"MultiLock.Acquire": func() error { _, err := ml.Acquire(nilCtx); return err },
		"Hold.Fenced":       func() error { _, err := h.Fenced(nilCtx, fencedOp); return err },
		"Hold.Context": func() error {
			ctx := h.Context(nilCtx)
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			default:
				return nil // a context that runs the work unprotected by any parent
			}
		},
	})
	// The goroutine that holds the mutex is refused too, and its count
	// of acquisitions stays one.
	_, err = held.Acquire(nilCtx)
	require.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	assert.Equal(t, before, req.Count(t, ""), "requests were sent")
	for _, dir := range []string{"/nil/m", "/nil/sm/leases", "/nil/sm/locks", "/nil/ml1", "/nil/ml2"} {
		assert.Empty(t, nodes(t, c, dir), "a node was left in %s", dir)
	}
	assert.Nil(t, h.Err(), "the hold is lost")

	// Everything works as before.
	ctx := ctxT(t, 10*time.Second)
	_, err = h.Fenced(ctx, fencedOp)
	require.NoError(t, err)
	require.NoError(t, held.Release())
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrReleased, "the refused re-entry counted as an acquisition")
	mh, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, mh.Release())
	sh, err := sm.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, sh.Release())
	hs, err := ml.Acquire(ctx)
	require.NoError(t, err)
	assert.Len(t, hs, 2)
	require.NoError(t, hold.ReleaseAll(hs...))
}
