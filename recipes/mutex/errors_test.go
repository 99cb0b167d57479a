package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// Every failure of the package's exported API matches the sentinel its
// documentation names (errors.Is), and nothing is left on the server.
func TestEveryFailureMatchesItsDocumentedSentinel(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	other := newClient(t, cl.Addrs())
	held := newMutex(t, other, "/errs/held")
	_, err := held.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	closedClient := newClient(t, cl.Addrs())
	onClosed := newMutex(t, closedClient, "/errs/closed-client")
	require.NoError(t, closedClient.Close())

	closedMutex := newMutex(t, c, "/errs/closed")
	closedH, err := closedMutex.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, closedMutex.Close())

	m := newMutex(t, c, "/errs/m")
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, h.Release())

	sm := newSemaphoreMutex(t, c, "/errs/sm")
	lease, err := sm.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	// A goroutine's holds whose session the server has expired. The
	// session-only policy keeps the link's suspension before the expiry
	// from being the holds' reason.
	p := cl.NewProxy()
	lc := newClient(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	lostM := newMutex(t, lc, "/errs/lost")
	lostR := newMutex(t, lc, "/errs/lost-release")
	lostSM := newSemaphoreMutex(t, lc, "/errs/lost-sm")
	holder := testkit.NewGoroutine(t)
	var lostH *hold.Hold
	require.NoError(t, holder.Do(func() (err error) { lostH, err = lostM.Acquire(ctxT(t, 10*time.Second)); return err }))
	require.NoError(t, holder.Do(func() error { _, err := lostR.Acquire(ctxT(t, 10*time.Second)); return err }))
	lostLease, err := lostSM.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	testkit.LoseSession(t, p, lc)
	testkit.WaitClosed(t, lostH.Done(), 10*time.Second, "the hold was not lost with its session")
	onHolder := func(f func() error) func() error { return func() error { return holder.Do(f) } }

	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"New: nil client":                            testkit.Fails(func() error { _, err := mutex.New(nil, "/x"); return err }, zkrecipes.ErrInvalidArgument),
		"New: bad path":                              testkit.Fails(func() error { _, err := mutex.New(c, "x/"); return err }, zkrecipes.ErrInvalidPath),
		"New: empty participant id":                  testkit.Fails(func() error { _, err := mutex.New(c, "/x", mutex.WithParticipantID("")); return err }, zkrecipes.ErrInvalidArgument),
		"New: nil watcher":                           testkit.Fails(func() error { _, err := mutex.New(c, "/x", mutex.WithWatcher(nil)); return err }, zkrecipes.ErrInvalidArgument),
		"New: another client's watcher":              testkit.Fails(func() error { _, err := mutex.New(c, "/x", mutex.WithWatcher(engine.NewWatcher(other))); return err }, zkrecipes.ErrInvalidArgument),
		"TryAcquire: held elsewhere":                 testkit.Fails(func() error { _, err := newMutex(t, c, "/errs/held").TryAcquire(ctxT(t, 10*time.Second)); return err }, zkrecipes.ErrWouldBlock),
		"Acquire: deadline":                          testkit.Fails(func() error { _, err := newMutex(t, c, "/errs/held").Acquire(testkit.Expired()); return err }, context.DeadlineExceeded),
		"Acquire: cancelled":                         testkit.Fails(func() error { _, err := newMutex(t, c, "/errs/held").Acquire(testkit.Cancelled()); return err }, context.Canceled),
		"Hold.Release: Mutex closed":                 testkit.Fails(closedH.Release, zkrecipes.ErrClosed, zkrecipes.ErrReleased),
		"Acquire: Mutex closed":                      testkit.Fails(func() error { _, err := closedMutex.Acquire(ctxT(t, time.Second)); return err }, zkrecipes.ErrClosed),
		"TryAcquire: Mutex closed":                   testkit.Fails(func() error { _, err := closedMutex.TryAcquire(ctxT(t, time.Second)); return err }, zkrecipes.ErrClosed),
		"Acquire: client closed":                     testkit.Fails(func() error { _, err := onClosed.Acquire(ctxT(t, time.Second)); return err }, zkrecipes.ErrClosed),
		"Participants: client closed":                testkit.Fails(func() error { _, err := onClosed.Participants(ctxT(t, time.Second)); return err }, zkrecipes.ErrClosed),
		"ParticipantNodes: client closed":            testkit.Fails(func() error { _, err := onClosed.ParticipantNodes(ctxT(t, time.Second)); return err }, zkrecipes.ErrClosed),
		"Revoke: client closed":                      testkit.Fails(func() error { return mutex.Revoke(ctxT(t, time.Second), closedClient, "/x/y") }, zkrecipes.ErrClosed),
		"Release: nothing held":                      testkit.Fails(m.Release, zkrecipes.ErrNotHeld),
		"Release: held by another goroutine":         testkit.Fails(func() error { return testkit.Elsewhere(held.Release) }, zkrecipes.ErrNotOwner),
		"Hold.Release: twice":                        testkit.Fails(h.Release, zkrecipes.ErrReleased),
		"Participants: nil client":                   testkit.Fails(func() error { _, err := mutex.Participants(context.Background(), nil, "/x"); return err }, zkrecipes.ErrInvalidArgument),
		"Revoke: nil client":                         testkit.Fails(func() error { return mutex.Revoke(context.Background(), nil, "/x/y") }, zkrecipes.ErrInvalidArgument),
		"NewMultiLock: none":                         testkit.Named("multilock: ", func() error { _, err := mutex.NewMultiLock(); return err }, zkrecipes.ErrInvalidArgument),
		"NewMultiLock: nil lock":                     testkit.Named("multilock: ", func() error { _, err := mutex.NewMultiLock(m, (*mutex.Mutex)(nil)); return err }, zkrecipes.ErrInvalidArgument),
		"NewSemaphoreMutex: nil client":              testkit.Fails(func() error { _, err := mutex.NewSemaphoreMutex(nil, "/x"); return err }, zkrecipes.ErrInvalidArgument),
		"SemaphoreMutex.TryAcquire: held":            testkit.Fails(func() error { _, err := sm.TryAcquire(ctxT(t, 10*time.Second)); return err }, zkrecipes.ErrWouldBlock),
		"Hold.Err: session lost":                     testkit.Fails(lostH.Err, zkrecipes.ErrSessionLost),
		"Acquire: own hold's session lost":           testkit.Fails(onHolder(func() error { _, err := lostM.Acquire(ctxT(t, 10*time.Second)); return err }), zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
		"TryAcquire: own hold's session lost":        testkit.Fails(onHolder(func() error { _, err := lostM.TryAcquire(ctxT(t, 10*time.Second)); return err }), zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
		"Release: session lost":                      testkit.Fails(onHolder(lostR.Release), zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
		"SemaphoreMutex lease: session lost":         testkit.Fails(lostLease.Err, zkrecipes.ErrSessionLost),
		"SemaphoreMutex lease.Release: session lost": testkit.Fails(lostLease.Release, zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
	})
	require.NoError(t, lease.Release())
	assert.Empty(t, nodes(t, c, "/errs/m"), "a failure left a node")
	assert.Len(t, nodes(t, c, "/errs/held"), 1, "a failure left a node")
	// The failed nested acquires counted nothing: one acquisition to
	// release, and no node left behind.
	assert.ErrorIs(t, holder.Do(lostM.Release), zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, holder.Do(lostM.Release), zkrecipes.ErrNotHeld)
	for _, dir := range []string{"/errs/lost", "/errs/lost-release", "/errs/lost-sm/leases"} {
		waitNodes(t, c, dir, 0)
	}
}
