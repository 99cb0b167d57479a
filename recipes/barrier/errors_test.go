package barrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

// Every failure of the package's API matches the sentinel its
// documentation names (errors.Is), is refused before anything is sent, and
// leaves nothing on the server.
func TestEveryFailureMatchesItsDocumentedSentinel(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	obs := newClient(t, cl.Addrs())

	closedClient := newClient(t, cl.Addrs())
	onClosedClient := newBarrier(t, closedClient, "/errs/closed-client")
	doubleOnClosedClient := newDouble(t, closedClient, "/errs/closed-client-d", 2)
	require.NoError(t, closedClient.Close())
	closedBarrier := newBarrier(t, c, "/errs/closed")
	require.NoError(t, closedBarrier.Close())
	closedDouble := newDouble(t, c, "/errs/closed-d", 2)
	require.NoError(t, closedDouble.Close())
	require.NoError(t, closedDouble.Close(), "Close is idempotent")
	require.NoError(t, closedBarrier.Close(), "Close is idempotent")
	one := newDouble(t, c, "/errs/one", 1)
	require.NoError(t, one.Enter(ctxT(t, 10*time.Second)))
	fresh := newDouble(t, c, "/errs/fresh", 2)

	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"New nil client":            testkit.Named("barrier /x: ", func() error { _, err := barrier.New(nil, "/x"); return err }, zkrecipes.ErrInvalidArgument),
		"New relative path":         testkit.Named("barrier x: ", func() error { _, err := barrier.New(c, "x"); return err }, zkrecipes.ErrInvalidPath),
		"New trailing slash":        testkit.Named("barrier /x/: ", func() error { _, err := barrier.New(c, "/x/"); return err }, zkrecipes.ErrInvalidPath),
		"New empty participant":     testkit.Named("barrier /x: ", func() error { _, err := barrier.New(c, "/x", barrier.WithParticipantID("")); return err }, zkrecipes.ErrInvalidArgument),
		"NewDouble nil client":      testkit.Named("double barrier /x: ", func() error { _, err := barrier.NewDouble(nil, "/x", 2); return err }, zkrecipes.ErrInvalidArgument),
		"NewDouble bad path":        testkit.Named("double barrier /x//y: ", func() error { _, err := barrier.NewDouble(c, "/x//y", 2); return err }, zkrecipes.ErrInvalidPath),
		"NewDouble zero members":    testkit.Named("double barrier /x: ", func() error { _, err := barrier.NewDouble(c, "/x", 0); return err }, zkrecipes.ErrInvalidArgument),
		"NewDouble negative":        testkit.Named("double barrier /x: ", func() error { _, err := barrier.NewDouble(c, "/x", -3); return err }, zkrecipes.ErrInvalidArgument),
		"NewDouble empty particip.": testkit.Named("double barrier /x: ", func() error { _, err := barrier.NewDouble(c, "/x", 2, barrier.WithParticipantID("")); return err }, zkrecipes.ErrInvalidArgument),
		"Set after Close":           testkit.Named("barrier /errs/closed: ", func() error { return closedBarrier.Set(context.Background()) }, zkrecipes.ErrClosed),
		"Remove after Close":        testkit.Named("barrier /errs/closed: ", func() error { return closedBarrier.Remove(context.Background()) }, zkrecipes.ErrClosed),
		"Wait after Close":          testkit.Named("barrier /errs/closed: ", func() error { return closedBarrier.Wait(context.Background()) }, zkrecipes.ErrClosed),
		"Set on closed client":      testkit.Named("barrier /errs/closed-client: ", func() error { return onClosedClient.Set(context.Background()) }, zkrecipes.ErrClosed),
		"Wait on closed client":     testkit.Named("barrier /errs/closed-client: ", func() error { return onClosedClient.Wait(context.Background()) }, zkrecipes.ErrClosed),
		"Enter after Close":         testkit.Named("double barrier /errs/closed-d: ", func() error { return closedDouble.Enter(context.Background()) }, zkrecipes.ErrClosed),
		"Leave after Close":         testkit.Named("double barrier /errs/closed-d: ", func() error { return closedDouble.Leave(context.Background()) }, zkrecipes.ErrClosed),
		"Enter on closed client":    testkit.Named("double barrier /errs/closed-client-d: ", func() error { return doubleOnClosedClient.Enter(context.Background()) }, zkrecipes.ErrClosed),
		"Enter while entered":       testkit.Named("double barrier /errs/one: ", func() error { return one.Enter(context.Background()) }, barrier.ErrAlreadyEntered),
		"Leave before Enter":        testkit.Named("double barrier /errs/fresh: ", func() error { return fresh.Leave(context.Background()) }, barrier.ErrNotEntered),
		"Enter with expired ctx":    testkit.Named("double barrier /errs/fresh: ", func() error { return fresh.Enter(testkit.Expired()) }, context.DeadlineExceeded),
		"nil Barrier":               testkit.Named("barrier: ", func() error { var b *barrier.Barrier; return b.Wait(context.Background()) }, zkrecipes.ErrInvalidArgument),
		"zero DoubleBarrier":        testkit.Named("double barrier: ", func() error { return new(barrier.DoubleBarrier).Enter(context.Background()) }, zkrecipes.ErrInvalidArgument),
		"Close of a nil Barrier":    testkit.Named("barrier: ", func() error { var b *barrier.Barrier; return b.Close() }, zkrecipes.ErrInvalidArgument),
		"Wait with cancelled ctx":   testkit.Named("barrier /errs/set: ", func() error { return newBarrier(t, c, "/errs/set").Wait(testkit.Cancelled()) }, context.Canceled),
	})
	require.NoError(t, one.Leave(ctxT(t, 10*time.Second)))
	require.NoError(t, c.Drain(ctxT(t, 10*time.Second)))
	for _, p := range []string{"/x", "/errs/fresh", "/errs/closed-client", "/errs/closed-client-d", "/errs/closed-d", "/errs/one"} {
		assert.Empty(t, nodes(t, obs, p), "left under %s", p)
	}
	for _, p := range []string{"/x", "/errs/closed", "/errs/closed-client"} {
		ok, _, err := obs.Exists(context.Background(), p)
		require.NoError(t, err)
		assert.False(t, ok, "%s was made", p)
	}
}
