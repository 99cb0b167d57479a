package framework_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Options of one Delete that ask for two things at once are refused with
// ErrInvalidArgument before anything is sent: the node is still there
// once every background delete is over.
func TestDeleteOptionsThatContradictAreRefusedUnsent(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	mustCreate(t, c, "/d", nil)
	owner := c.Session().ID
	cases := []struct {
		name    string
		version int32
		opts    []framework.DeleteOption
	}{
		{"AtMostOnce+Guaranteed", -1, []framework.DeleteOption{framework.DeleteAtMostOnce(), framework.Guaranteed()}},
		{"AtMostOnce+WithChildren", -1, []framework.DeleteOption{framework.DeleteAtMostOnce(), framework.WithChildren()}},
		{"AtMostOnce+InBackground", -1, []framework.DeleteOption{framework.DeleteAtMostOnce(), framework.InBackground()}},
		{"AtMostOnce+Deferred", -1, []framework.DeleteOption{framework.DeleteAtMostOnce(), framework.Deferred()}},
		{"InBackground+Deferred", -1, []framework.DeleteOption{framework.InBackground(), framework.Deferred()}},
		{"WithChildren+InBackground", -1, []framework.DeleteOption{framework.WithChildren(), framework.InBackground()}},
		{"WithChildren+Deferred", -1, []framework.DeleteOption{framework.WithChildren(), framework.Deferred()}},
		{"OwnedBy alone", -1, []framework.DeleteOption{framework.OwnedBy(owner)}},
		{"OwnedBy session 0", -1, []framework.DeleteOption{framework.OwnedBy(0), framework.Deferred()}},
		{"OwnedBy with a version", 0, []framework.DeleteOption{framework.OwnedBy(owner), framework.InBackground()}},
	}
	for _, tc := range cases {
		err := c.Delete(testCtx(t), "/d", tc.version, tc.opts...)
		assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument, tc.name)
		assert.ErrorContains(t, err, "/d", tc.name)
	}
	require.NoError(t, c.Drain(testCtx(t)))
	assert.True(t, exists(t, c, "/d"), "a refused delete was sent")
}

// Deferred is for the cleanup of a call that failed: its ctx may be over,
// and the delete goes on all the same; the call returns at once.
func TestDeleteDeferredGoesOnAfterItsContextEnded(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	mustCreate(t, c, "/later", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, c.Delete(ctx, "/later", -1, framework.Deferred()))
	require.NoError(t, c.Drain(testCtx(t)))
	assert.False(t, exists(t, c, "/later"))
	assert.Empty(t, c.PendingDeletes())
}

// A Deferred delete of a version the node does not have gives up (retrying
// cannot help) instead of retrying for ever; the node stays.
func TestDeleteDeferredOfAnotherVersionGivesUp(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	mustCreate(t, c, "/versioned", nil)
	require.NoError(t, c.Delete(testCtx(t), "/versioned", 5, framework.Deferred()))
	require.NoError(t, c.Drain(testCtx(t)))
	assert.True(t, exists(t, c, "/versioned"))
}
