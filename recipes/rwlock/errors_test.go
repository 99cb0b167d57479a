package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
)

// side is what the read and the write side have in common.
type side interface {
	Acquire(context.Context) (*hold.Hold, error)
	TryAcquire(context.Context) (*hold.Hold, error)
	Release() error
}

// Every failure of the package's exported API (RWLock, both sides, the
// downgrade, the holds) matches the sentinel its documentation names
// (errors.Is), and nothing is left on the server.
func TestEveryFailureMatchesItsDocumentedSentinel(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	other := newClient(t, cl.Addrs())
	operator := newClient(t, cl.Addrs())

	// Written elsewhere: both sides block here.
	writer := newRW(t, other, "/errs/written")
	_, err := writer.WriteLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	written := newRW(t, c, "/errs/written")
	// Read elsewhere: the write side blocks here.
	reader := newRW(t, other, "/errs/read")
	_, err = reader.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	read := newRW(t, c, "/errs/read")

	closedClient := newClient(t, cl.Addrs())
	onClosed := newRW(t, closedClient, "/errs/closed-client")
	require.NoError(t, closedClient.Close())
	closedLock := newRW(t, c, "/errs/closed")
	require.NoError(t, closedLock.Close())
	// Holds that their RWLock's Close released.
	closedR, closedW := newRW(t, c, "/errs/closed-read"), newRW(t, c, "/errs/closed-write")
	closedRH, err := closedR.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	closedWH, err := closedW.WriteLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, closedR.Close())
	require.NoError(t, closedW.Close())

	// Released holds of both sides, and a lock nobody holds.
	l := newRW(t, c, "/errs/l")
	rh, err := l.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, rh.Release())
	wh, err := l.WriteLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, wh.Release())

	// A goroutine that holds the read lock asks for the write lock; one
	// whose write node someone else deleted asks for the read lock (a
	// downgrade).
	holder := testkit.NewGoroutine(t)
	onHolder := func(f func() error) func() error { return func() error { return holder.Do(f) } }
	upgrade := newRW(t, c, "/errs/upgrade")
	require.NoError(t, holder.Do(func() error { _, err := upgrade.ReadLock().Acquire(ctxT(t, 10*time.Second)); return err }))
	down := newRW(t, c, "/errs/down")
	require.NoError(t, holder.Do(func() error { _, err := down.WriteLock().Acquire(ctxT(t, 10*time.Second)); return err }))
	deleted := newRW(t, c, "/errs/deleted")
	var deletedH *hold.Hold
	require.NoError(t, holder.Do(func() (err error) { deletedH, err = deleted.WriteLock().Acquire(ctxT(t, 10*time.Second)); return err }))
	require.NoError(t, operator.Delete(ctxT(t, 10*time.Second), deletedH.Path(), -1))
	testkit.WaitClosed(t, deletedH.Done(), 10*time.Second, "the write hold was not lost with its node")

	// A goroutine's holds whose session the server has expired. The
	// session-only policy keeps the link's suspension before the expiry
	// from being the holds' reason.
	p := cl.NewProxy()
	lc := newClient(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	lostRead, lostWrite, lostDown := newRW(t, lc, "/errs/lost-read"), newRW(t, lc, "/errs/lost-write"), newRW(t, lc, "/errs/lost-down")
	lostReleaseR, lostReleaseW := newRW(t, lc, "/errs/lost-release-read"), newRW(t, lc, "/errs/lost-release-write")
	var lostRH, lostWH *hold.Hold
	require.NoError(t, holder.Do(func() (err error) { lostRH, err = lostRead.ReadLock().Acquire(ctxT(t, 10*time.Second)); return err }))
	require.NoError(t, holder.Do(func() (err error) { lostWH, err = lostWrite.WriteLock().Acquire(ctxT(t, 10*time.Second)); return err }))
	require.NoError(t, holder.Do(func() error { _, err := lostDown.WriteLock().Acquire(ctxT(t, 10*time.Second)); return err }))
	require.NoError(t, holder.Do(func() error { _, err := lostReleaseR.ReadLock().Acquire(ctxT(t, 10*time.Second)); return err }))
	require.NoError(t, holder.Do(func() error { _, err := lostReleaseW.WriteLock().Acquire(ctxT(t, 10*time.Second)); return err }))
	lostHandle, err := newRW(t, lc, "/errs/lost-handle").ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	testkit.LoseSession(t, p, lc)
	testkit.WaitClosed(t, lostRH.Done(), 10*time.Second, "the read hold was not lost with its session")
	testkit.WaitClosed(t, lostWH.Done(), 10*time.Second, "the write hold was not lost with its session")

	acquire := func(try bool, lock func() side, ctx func() context.Context) func() error {
		return func() error {
			var err error
			if try {
				_, err = lock().TryAcquire(ctx())
			} else {
				_, err = lock().Acquire(ctx())
			}
			return err
		}
	}
	ctx10 := func() context.Context { return ctxT(t, 10*time.Second) }
	rd := func(l *rwlock.RWLock) func() side { return func() side { return l.ReadLock() } }
	wr := func(l *rwlock.RWLock) func() side { return func() side { return l.WriteLock() } }

	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"New: nil client":           testkit.Fails(func() error { _, err := rwlock.New(nil, "/x"); return err }, zkrecipes.ErrInvalidArgument),
		"New: bad path":             testkit.Fails(func() error { _, err := rwlock.New(c, "x/"); return err }, zkrecipes.ErrInvalidPath),
		"New: empty participant id": testkit.Fails(func() error { _, err := rwlock.New(c, "/x", rwlock.WithParticipantID("")); return err }, zkrecipes.ErrInvalidArgument),

		"ReadLock.TryAcquire: written elsewhere":  testkit.Fails(acquire(true, rd(written), ctx10), zkrecipes.ErrWouldBlock),
		"WriteLock.TryAcquire: written elsewhere": testkit.Fails(acquire(true, wr(written), ctx10), zkrecipes.ErrWouldBlock),
		"WriteLock.TryAcquire: read elsewhere":    testkit.Fails(acquire(true, wr(read), ctx10), zkrecipes.ErrWouldBlock),
		"ReadLock.Acquire: deadline":              testkit.Fails(acquire(false, rd(written), testkit.Expired), context.DeadlineExceeded),
		"ReadLock.Acquire: cancelled":             testkit.Fails(acquire(false, rd(written), testkit.Cancelled), context.Canceled),
		"WriteLock.Acquire: deadline":             testkit.Fails(acquire(false, wr(read), testkit.Expired), context.DeadlineExceeded),
		"WriteLock.Acquire: cancelled":            testkit.Fails(acquire(false, wr(read), testkit.Cancelled), context.Canceled),

		"ReadLock.Acquire: RWLock closed":     testkit.Fails(acquire(false, rd(closedLock), ctx10), zkrecipes.ErrClosed),
		"ReadLock.TryAcquire: RWLock closed":  testkit.Fails(acquire(true, rd(closedLock), ctx10), zkrecipes.ErrClosed),
		"WriteLock.Acquire: RWLock closed":    testkit.Fails(acquire(false, wr(closedLock), ctx10), zkrecipes.ErrClosed),
		"WriteLock.TryAcquire: RWLock closed": testkit.Fails(acquire(true, wr(closedLock), ctx10), zkrecipes.ErrClosed),
		"ReadLock.Acquire: client closed":     testkit.Fails(acquire(false, rd(onClosed), ctx10), zkrecipes.ErrClosed),
		"WriteLock.Acquire: client closed":    testkit.Fails(acquire(false, wr(onClosed), ctx10), zkrecipes.ErrClosed),

		"ReadLock.Release: nothing held":               testkit.Fails(l.ReadLock().Release, zkrecipes.ErrNotHeld),
		"WriteLock.Release: nothing held":              testkit.Fails(l.WriteLock().Release, zkrecipes.ErrNotHeld),
		"ReadLock.Release: held by another goroutine":  testkit.Fails(func() error { return testkit.Elsewhere(reader.ReadLock().Release) }, zkrecipes.ErrNotOwner),
		"WriteLock.Release: held by another goroutine": testkit.Fails(func() error { return testkit.Elsewhere(writer.WriteLock().Release) }, zkrecipes.ErrNotOwner),
		"read Hold.Release: twice":                     testkit.Fails(rh.Release, zkrecipes.ErrReleased),
		"read Hold.Release: RWLock closed":             testkit.Fails(closedRH.Release, zkrecipes.ErrClosed, zkrecipes.ErrReleased),
		"write Hold.Release: RWLock closed":            testkit.Fails(closedWH.Release, zkrecipes.ErrClosed, zkrecipes.ErrReleased),
		"write Hold.Release: twice":                    testkit.Fails(wh.Release, zkrecipes.ErrReleased),

		"WriteLock.Acquire: holding the read lock":      testkit.Fails(onHolder(acquire(false, wr(upgrade), ctx10)), rwlock.ErrUpgrade),
		"WriteLock.TryAcquire: holding the read lock":   testkit.Fails(onHolder(acquire(true, wr(upgrade), ctx10)), rwlock.ErrUpgrade),
		"ReadLock.Acquire (downgrade): deadline":        testkit.Fails(onHolder(acquire(false, rd(down), testkit.Expired)), context.DeadlineExceeded),
		"ReadLock.Acquire (downgrade): cancelled":       testkit.Fails(onHolder(acquire(false, rd(down), testkit.Cancelled)), context.Canceled),
		"ReadLock.Acquire (downgrade): node deleted":    testkit.Fails(onHolder(acquire(false, rd(deleted), ctx10)), zkrecipes.ErrHoldLost, zkrecipes.ErrNodeDeleted),
		"WriteLock.Acquire: own hold's node deleted":    testkit.Fails(onHolder(acquire(false, wr(deleted), ctx10)), zkrecipes.ErrHoldLost, zkrecipes.ErrNodeDeleted),
		"ReadLock.Acquire: own hold's session lost":     testkit.Fails(onHolder(acquire(false, rd(lostRead), ctx10)), zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
		"ReadLock.TryAcquire: own hold's session lost":  testkit.Fails(onHolder(acquire(true, rd(lostRead), ctx10)), zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
		"WriteLock.Acquire: own hold's session lost":    testkit.Fails(onHolder(acquire(false, wr(lostWrite), ctx10)), zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
		"WriteLock.TryAcquire: own hold's session lost": testkit.Fails(onHolder(acquire(true, wr(lostWrite), ctx10)), zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
		"ReadLock.Acquire (downgrade): session lost":    testkit.Fails(onHolder(acquire(false, rd(lostDown), ctx10)), zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
		"read Hold.Err: session lost":                   testkit.Fails(lostRH.Err, zkrecipes.ErrSessionLost),
		"write Hold.Err: session lost":                  testkit.Fails(lostWH.Err, zkrecipes.ErrSessionLost),
		"ReadLock.Release: session lost":                testkit.Fails(onHolder(lostReleaseR.ReadLock().Release), zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
		"WriteLock.Release: session lost":               testkit.Fails(onHolder(lostReleaseW.WriteLock().Release), zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
		"Hold.Release: session lost":                    testkit.Fails(lostHandle.Release, zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost),
	})

	// The failed acquires counted nothing: one acquisition each to
	// release, and no node left behind.
	for _, s := range []side{lostRead.ReadLock(), lostWrite.WriteLock(), lostDown.WriteLock()} {
		assert.ErrorIs(t, holder.Do(s.Release), zkrecipes.ErrHoldLost)
		assert.ErrorIs(t, holder.Do(s.Release), zkrecipes.ErrNotHeld)
	}
	assert.Len(t, nodes(t, c, "/errs/down"), 1, "a failed downgrade left its read node")
	assert.NoError(t, holder.Do(down.WriteLock().Release), "a failed downgrade counted")
	assert.ErrorIs(t, holder.Do(down.ReadLock().Release), zkrecipes.ErrNotHeld, "a failed downgrade counted")
	assert.ErrorIs(t, holder.Do(deleted.WriteLock().Release), zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, holder.Do(deleted.WriteLock().Release), zkrecipes.ErrNotHeld)
	assert.Empty(t, nodes(t, c, "/errs/l"), "a failure left a node")
	assert.Len(t, nodes(t, c, "/errs/written"), 1, "a failure left a node")
	assert.Len(t, nodes(t, c, "/errs/read"), 1, "a failure left a node")
	for _, dir := range []string{"/errs/down", "/errs/closed-read", "/errs/closed-write", "/errs/deleted", "/errs/lost-read", "/errs/lost-write", "/errs/lost-down", "/errs/lost-release-read", "/errs/lost-release-write", "/errs/lost-handle"} {
		waitNodes(t, c, dir, 0)
	}
}
