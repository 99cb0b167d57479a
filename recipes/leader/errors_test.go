package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
)

func newSelector(t testing.TB, c *framework.Client, path string, fn leader.Func, opts ...leader.SelectorOption) *leader.Selector {
	t.Helper()
	s, err := leader.NewSelector(c, path, fn, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// Every failure of the package's exported API (Latch, its terms, Selector,
// the package functions) matches the sentinel its documentation names
// (errors.Is).
func TestEveryFailureMatchesItsDocumentedSentinel(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	idle := func(ctx context.Context, _ *hold.Hold) error { <-ctx.Done(); return nil }

	// Another participant leads: this one waits.
	leading := newLatch(t, newClient(t, cl.Addrs()), "/errs/led", "a")
	require.NoError(t, leading.Start(context.Background()))
	_, err := leading.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	follower := newLatch(t, c, "/errs/led", "b")
	require.NoError(t, follower.Start(context.Background()))

	started := newLatch(t, c, "/errs/started", "x")
	require.NoError(t, started.Start(context.Background()))
	closedLatch := newLatch(t, c, "/errs/closed", "x")
	require.NoError(t, closedLatch.Close())
	startedSel := newSelector(t, c, "/errs/sel-started", idle)
	require.NoError(t, startedSel.Start(context.Background()))
	closedSel := newSelector(t, c, "/errs/sel-closed", idle)
	require.NoError(t, closedSel.Close())

	// A term stepped down from, and one whose latch closed.
	stepped := newLatch(t, c, "/errs/stepped", "x")
	require.NoError(t, stepped.Start(context.Background()))
	steppedTerm, err := stepped.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, steppedTerm.Release())
	closing := newLatch(t, c, "/errs/closing", "x")
	require.NoError(t, closing.Start(context.Background()))
	closedTerm, err := closing.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, closing.Close())

	// A selector whose job panics.
	panicked := make(chan error, 1)
	require.NoError(t, newSelector(t, c, "/errs/panic", func(context.Context, *hold.Hold) error { panic("boom") },
		leader.WithErrorHandler(func(err error) { panicked <- err })).Start(context.Background()))

	closedClient := newClient(t, cl.Addrs())
	latchOnClosed := newLatch(t, closedClient, "/errs/closed-client", "x")
	selOnClosed := newSelector(t, closedClient, "/errs/closed-client", idle)
	require.NoError(t, closedClient.Close())

	// A term, and a selector's job, whose session the server has expired.
	// The session-only policy keeps the link's suspension before the
	// expiry from being their reason.
	p := cl.NewProxy()
	lc := newClient(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	lostLatch := newLatch(t, lc, "/errs/lost", "x")
	require.NoError(t, lostLatch.Start(context.Background()))
	lostTerm, err := lostLatch.Await(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	jobCause := make(chan error, 1)
	jobStarted := make(chan struct{})
	require.NoError(t, newSelector(t, lc, "/errs/lost-sel", func(ctx context.Context, _ *hold.Hold) error {
		close(jobStarted)
		<-ctx.Done()
		jobCause <- context.Cause(ctx)
		return nil
	}).Start(context.Background()))
	testkit.WaitClosed(t, jobStarted, 10*time.Second, "the selector's job did not start")
	testkit.LoseSession(t, p, lc)
	testkit.WaitClosed(t, lostTerm.Done(), 10*time.Second, "the term was not lost with its session")

	ctx10 := func() context.Context { return ctxT(t, 10*time.Second) }
	await := func(l *leader.Latch, ctx func() context.Context) func() error {
		return func() error { _, err := l.Await(ctx()); return err }
	}
	receive := func(ch <-chan error) func() error {
		return func() error {
			select {
			case err := <-ch:
				return err
			case <-time.After(30 * time.Second):
				return nil
			}
		}
	}

	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"NewLatch: nil client":                 testkit.Fails(func() error { _, err := leader.NewLatch(nil, "/x"); return err }, zkrecipes.ErrInvalidArgument),
		"NewLatch: bad path":                   testkit.Fails(func() error { _, err := leader.NewLatch(c, "x/"); return err }, zkrecipes.ErrInvalidPath),
		"NewLatch: empty participant id":       testkit.Fails(func() error { _, err := leader.NewLatch(c, "/x", leader.WithParticipantID("")); return err }, zkrecipes.ErrInvalidArgument),
		"NewSelector: nil client":              testkit.Fails(func() error { _, err := leader.NewSelector(nil, "/x", idle); return err }, zkrecipes.ErrInvalidArgument),
		"NewSelector: nil func":                testkit.Fails(func() error { _, err := leader.NewSelector(c, "/x", nil); return err }, zkrecipes.ErrInvalidArgument),
		"NewSelector: bad path":                testkit.Fails(func() error { _, err := leader.NewSelector(c, "x/", idle); return err }, zkrecipes.ErrInvalidPath),
		"NewSelector: empty participant id":    testkit.Fails(func() error { _, err := leader.NewSelector(c, "/x", idle, leader.WithParticipantID("")); return err }, zkrecipes.ErrInvalidArgument),
		"NewSelector: nil error handler":       testkit.Fails(func() error { _, err := leader.NewSelector(c, "/x", idle, leader.WithErrorHandler(nil)); return err }, zkrecipes.ErrInvalidArgument),
		"Participants: nil client":             testkit.Fails(func() error { _, err := leader.Participants(ctx10(), nil, "/x"); return err }, zkrecipes.ErrInvalidArgument),
		"Leader: nil client":                   testkit.Fails(func() error { _, err := leader.Leader(ctx10(), nil, "/x"); return err }, zkrecipes.ErrInvalidArgument),
		"Participants: client closed":          testkit.Fails(func() error { _, err := leader.Participants(ctx10(), closedClient, "/x"); return err }, zkrecipes.ErrClosed),
		"Leader: client closed":                testkit.Fails(func() error { _, err := leader.Leader(ctx10(), closedClient, "/x"); return err }, zkrecipes.ErrClosed),
		"Latch.Participants: client closed":    testkit.Fails(func() error { _, err := latchOnClosed.Participants(ctx10()); return err }, zkrecipes.ErrClosed),
		"Selector.Participants: client closed": testkit.Fails(func() error { _, err := selOnClosed.Participants(ctx10()); return err }, zkrecipes.ErrClosed),

		"Latch.Start: twice":           testkit.Fails(func() error { return started.Start(context.Background()) }, zkrecipes.ErrStarted),
		"Latch.Start: closed":          testkit.Fails(func() error { return closedLatch.Start(context.Background()) }, zkrecipes.ErrClosed),
		"Latch.Await: closed":          testkit.Fails(await(closedLatch, ctx10), zkrecipes.ErrClosed),
		"Latch.Await: deadline":        testkit.Fails(await(follower, testkit.Expired), context.DeadlineExceeded),
		"Latch.Await: cancelled":       testkit.Fails(await(follower, testkit.Cancelled), context.Canceled),
		"Latch.Await: timeout":         testkit.Fails(await(follower, func() context.Context { return ctxT(t, 300*time.Millisecond) }), context.DeadlineExceeded),
		"Term.Err: stepped down":       testkit.Fails(steppedTerm.Err, zkrecipes.ErrReleased),
		"Term.Release: twice":          testkit.Fails(steppedTerm.Release, zkrecipes.ErrReleased),
		"Term.Err: latch closed":       testkit.Fails(closedTerm.Err, zkrecipes.ErrClosed),
		"Term.Release: latch closed":   testkit.Fails(closedTerm.Release, zkrecipes.ErrClosed, zkrecipes.ErrReleased),
		"Term.Err: session lost":       testkit.Fails(lostTerm.Err, zkrecipes.ErrSessionLost),
		"Term.Release: session lost":   testkit.Fails(lostTerm.Release, zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
		"Selector.Start: twice":        testkit.Fails(func() error { return startedSel.Start(context.Background()) }, zkrecipes.ErrStarted),
		"Selector.Start: closed":       testkit.Fails(func() error { return closedSel.Start(context.Background()) }, zkrecipes.ErrClosed),
		"Selector.Requeue: closed":     testkit.Fails(func() error { return closedSel.Requeue(context.Background()) }, zkrecipes.ErrClosed),
		"Selector: job panics":         testkit.Fails(receive(panicked), leader.ErrPanic),
		"Selector: job's session lost": testkit.Fails(receive(jobCause), zkrecipes.ErrSessionLost),
	})
}
