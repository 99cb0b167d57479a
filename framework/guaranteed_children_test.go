package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A guaranteed delete of a node with children, cut off before it is
// answered, still deletes the children in the background, as Curator's
// delete().guaranteed().deletingChildrenIfNeeded() does: it does not give
// up with NotEmpty once the link is back.
func TestGuaranteedDeleteWithChildrenCompletesInTheBackground(t *testing.T) {
	cl := zktest.Standalone(t)
	c, p := dialFault(t, cl)
	obs := observer(t, cl)
	for _, path := range []string{"/tree", "/tree/a", "/tree/a/b", "/tree/c"} {
		_, err := c.Create(t.Context(), path, nil)
		require.NoError(t, err)
	}

	p.Blackhole()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	err := c.Delete(ctx, "/tree", -1, framework.Guaranteed(), framework.WithChildren())
	require.ErrorIs(t, err, zkrecipes.ErrDeferred)
	assert.Equal(t, []string{"/tree"}, c.PendingDeletes())

	p.Heal()
	require.NoError(t, c.Drain(t.Context()))
	ok, _, err := obs.Exists(context.Background(), "/tree")
	require.NoError(t, err)
	assert.False(t, ok, "the background delete gave up on a node with children")
}
