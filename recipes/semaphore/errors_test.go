package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// Every failure of the package's exported API (New, NewShared, the
// Semaphore, SetCount, the leases) matches the sentinel its documentation
// names (errors.Is), and nothing is left on the server.
func TestEveryFailureMatchesItsDocumentedSentinel(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	other := newClient(t, cl.Addrs())

	// Every lease taken elsewhere.
	_, err := newSem(t, other, "/errs/full", 2).Acquire(ctxT(t, 10*time.Second), 2)
	require.NoError(t, err)
	full := newSem(t, c, "/errs/full", 2)
	// One of two leases taken elsewhere.
	_, err = newSem(t, other, "/errs/half", 2).Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	half := newSem(t, c, "/errs/half", 2)
	// A shared count that was never set.
	unset := newShared(t, c, "/errs/unset", "/errs/counts/unset")

	closedClient := newClient(t, cl.Addrs())
	onClosed := newSem(t, closedClient, "/errs/closed-client", 2)
	sharedOnClosed := newShared(t, closedClient, "/errs/closed-client", "/errs/counts/unset")
	require.NoError(t, closedClient.Close())
	closedSem := newSem(t, c, "/errs/closed", 2)
	require.NoError(t, closedSem.Close())
	closedShared := newShared(t, c, "/errs/closed-shared", "/errs/counts/unset")
	require.NoError(t, closedShared.Close())

	s := newSem(t, c, "/errs/s", 2)
	released, err := s.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	require.NoError(t, released[0].Release())
	closing := newSem(t, c, "/errs/closing", 2)
	closedLease, err := closing.Acquire(ctxT(t, 10*time.Second), 1)
	require.NoError(t, err)
	require.NoError(t, closing.Close())

	// Leases whose session the server has expired. The session-only
	// policy keeps the link's suspension before the expiry from being
	// their reason.
	p := cl.NewProxy()
	lc := newClient(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	lost, err := newSem(t, lc, "/errs/lost", 2).Acquire(ctxT(t, 10*time.Second), 2)
	require.NoError(t, err)
	testkit.LoseSession(t, p, lc)
	testkit.WaitClosed(t, lost[0].Done(), 10*time.Second, "the lease was not lost with its session")

	acquire := func(s *semaphore.Semaphore, ctx func() context.Context, n int) func() error {
		return func() error { _, err := s.Acquire(ctx(), n); return err }
	}
	try := func(s *semaphore.Semaphore, n int) func() error {
		return func() error { _, err := s.TryAcquire(ctxT(t, 10*time.Second), n); return err }
	}
	ctx10 := func() context.Context { return ctxT(t, 10*time.Second) }
	ctx1 := func() context.Context { return ctxT(t, time.Second) }
	maxLeases := func(s *semaphore.Semaphore, ctx func() context.Context) func() error {
		return func() error { _, err := s.MaxLeases(ctx()); return err }
	}

	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"New: nil client":           testkit.Fails(func() error { _, err := semaphore.New(nil, "/x", 1); return err }, zkrecipes.ErrInvalidArgument),
		"New: bad path":             testkit.Fails(func() error { _, err := semaphore.New(c, "x/", 1); return err }, zkrecipes.ErrInvalidPath),
		"New: zero max":             testkit.Fails(func() error { _, err := semaphore.New(c, "/x", 0); return err }, zkrecipes.ErrInvalidArgument, zkrecipes.ErrInvalidArgument),
		"New: negative max":         testkit.Fails(func() error { _, err := semaphore.New(c, "/x", -1); return err }, zkrecipes.ErrInvalidArgument, zkrecipes.ErrInvalidArgument),
		"New: empty participant id": testkit.Fails(func() error { _, err := semaphore.New(c, "/x", 1, semaphore.WithParticipantID("")); return err }, zkrecipes.ErrInvalidArgument),
		"NewShared: nil client":     testkit.Fails(func() error { _, err := semaphore.NewShared(nil, "/x", "/c"); return err }, zkrecipes.ErrInvalidArgument),
		"NewShared: bad path":       testkit.Fails(func() error { _, err := semaphore.NewShared(c, "x/", "/c"); return err }, zkrecipes.ErrInvalidPath),
		"NewShared: bad count path": testkit.Fails(func() error { _, err := semaphore.NewShared(c, "/x", "c"); return err }, zkrecipes.ErrInvalidPath),
		"NewShared: empty participant id": testkit.Fails(func() error {
			_, err := semaphore.NewShared(c, "/x", "/c", semaphore.WithParticipantID(""))
			return err
		}, zkrecipes.ErrInvalidArgument),

		"Acquire: zero leases":      testkit.Fails(acquire(s, ctx10, 0), zkrecipes.ErrInvalidArgument),
		"Acquire: negative leases":  testkit.Fails(acquire(s, ctx10, -1), zkrecipes.ErrInvalidArgument),
		"TryAcquire: zero leases":   testkit.Fails(try(s, 0), zkrecipes.ErrInvalidArgument),
		"Acquire: above the max":    testkit.Fails(acquire(s, ctx10, 3), zkrecipes.ErrInvalidArgument),
		"TryAcquire: above the max": testkit.Fails(try(s, 3), zkrecipes.ErrInvalidArgument),

		"TryAcquire: every lease taken":  testkit.Fails(try(full, 1), zkrecipes.ErrWouldBlock),
		"TryAcquire: too few free":       testkit.Fails(try(half, 2), zkrecipes.ErrWouldBlock),
		"Acquire: deadline":              testkit.Fails(acquire(full, testkit.Expired, 1), context.DeadlineExceeded),
		"Acquire: cancelled":             testkit.Fails(acquire(full, testkit.Cancelled, 1), context.Canceled),
		"Acquire: timeout while waiting": testkit.Fails(acquire(full, ctx1, 1), context.DeadlineExceeded),
		"Acquire: count never set":       testkit.Fails(acquire(unset, ctx1, 1), context.DeadlineExceeded),
		"MaxLeases: count never set":     testkit.Fails(maxLeases(unset, ctx1), context.DeadlineExceeded),

		"Acquire: Semaphore closed":       testkit.Fails(acquire(closedSem, ctx10, 1), zkrecipes.ErrClosed),
		"TryAcquire: Semaphore closed":    testkit.Fails(try(closedSem, 1), zkrecipes.ErrClosed),
		"MaxLeases: Semaphore closed":     testkit.Fails(maxLeases(closedShared, ctx10), zkrecipes.ErrClosed),
		"Acquire: client closed":          testkit.Fails(acquire(onClosed, ctx10, 1), zkrecipes.ErrClosed),
		"TryAcquire: client closed":       testkit.Fails(try(onClosed, 1), zkrecipes.ErrClosed),
		"MaxLeases: client closed":        testkit.Fails(maxLeases(sharedOnClosed, ctx10), zkrecipes.ErrClosed),
		"Participants: client closed":     testkit.Fails(func() error { _, err := onClosed.Participants(ctx10()); return err }, zkrecipes.ErrClosed),
		"ParticipantNodes: client closed": testkit.Fails(func() error { _, err := onClosed.ParticipantNodes(ctx10()); return err }, zkrecipes.ErrClosed),
		"lease Release: twice":            testkit.Fails(released[0].Release, zkrecipes.ErrReleased),
		"lease Release: Semaphore closed": testkit.Fails(closedLease[0].Release, zkrecipes.ErrReleased, zkrecipes.ErrClosed),
		"lease Err: session lost":         testkit.Fails(lost[0].Err, zkrecipes.ErrSessionLost),
		"lease Release: session lost":     testkit.Fails(lost[1].Release, zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
	})

	assert.Empty(t, nodes(t, c, "/errs/s/leases"), "a failure left a node")
	assert.Len(t, nodes(t, c, "/errs/full/leases"), 2, "a failure left a node")
	assert.Len(t, nodes(t, c, "/errs/half/leases"), 1, "a failure left a node")
	assert.Empty(t, nodes(t, c, "/errs/full/locks"), "a failure left the internal mutex held")
	assert.Empty(t, nodes(t, c, "/errs/unset/leases"), "a failure left a node")
	for _, dir := range []string{"/errs/closing/leases", "/errs/lost/leases"} {
		waitNodes(t, c, dir, 0)
	}
}
