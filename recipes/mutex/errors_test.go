package mutex_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
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
	require.NoError(t, closedMutex.Close())

	m := newMutex(t, c, "/errs/m")
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, h.Release())

	sm := newSemaphoreMutex(t, c, "/errs/sm")
	lease, err := sm.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	expired, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-expired.Done()

	for name, tc := range map[string]struct {
		call func() error
		want error
	}{
		"New: nil client":                    {func() error { _, err := mutex.New(nil, "/x"); return err }, mutex.ErrNilClient},
		"New: bad path":                      {func() error { _, err := mutex.New(c, "x/"); return err }, framework.ErrInvalidPath},
		"New: empty participant id":          {func() error { _, err := mutex.New(c, "/x", mutex.WithParticipantID("")); return err }, mutex.ErrInvalidOption},
		"TryAcquire: held elsewhere":         {func() error { _, err := newMutex(t, c, "/errs/held").TryAcquire(ctxT(t, 10*time.Second)); return err }, mutex.ErrWouldBlock},
		"Acquire: deadline":                  {func() error { _, err := newMutex(t, c, "/errs/held").Acquire(expired); return err }, context.DeadlineExceeded},
		"Acquire: Mutex closed":              {func() error { _, err := closedMutex.Acquire(ctxT(t, time.Second)); return err }, mutex.ErrClosed},
		"TryAcquire: Mutex closed":           {func() error { _, err := closedMutex.TryAcquire(ctxT(t, time.Second)); return err }, mutex.ErrClosed},
		"Acquire: client closed":             {func() error { _, err := onClosed.Acquire(ctxT(t, time.Second)); return err }, mutex.ErrClosed},
		"Release: nothing held":              {m.Release, mutex.ErrNotHeld},
		"Release: held by another goroutine": {func() error { return <-releaseElsewhere(held) }, mutex.ErrNotOwner},
		"Hold.Release: twice":                {h.Release, mutex.ErrReleased},
		"Participants: nil client":           {func() error { _, err := mutex.Participants(context.Background(), nil, "/x"); return err }, mutex.ErrNilClient},
		"Revoke: nil client":                 {func() error { return mutex.Revoke(context.Background(), nil, "/x/y") }, mutex.ErrNilClient},
		"NewMultiLock: none":                 {func() error { _, err := mutex.NewMultiLock(); return err }, mutex.ErrNoLocks},
		"NewMultiLock: nil lock":             {func() error { _, err := mutex.NewMultiLock(m, (*mutex.Mutex)(nil)); return err }, mutex.ErrNoLocks},
		"NewSemaphoreMutex: nil client":      {func() error { _, err := mutex.NewSemaphoreMutex(nil, "/x"); return err }, mutex.ErrNilClient},
		"NewSemaphoreMutex: revocable":       {func() error { _, err := mutex.NewSemaphoreMutex(c, "/x", mutex.WithRevocable()); return err }, mutex.ErrNotRevocable},
		"SemaphoreMutex.TryAcquire: held":    {func() error { _, err := sm.TryAcquire(ctxT(t, 10*time.Second)); return err }, mutex.ErrWouldBlock},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.call()
			assert.True(t, errors.Is(err, tc.want), "got %v, want %v", err, tc.want)
		})
	}
	require.NoError(t, lease.Release())
	assert.Empty(t, nodes(t, c, "/errs/m"), "a failure left a node")
	assert.Len(t, nodes(t, c, "/errs/held"), 1, "a failure left a node")
}

// releaseElsewhere calls m.Release from a goroutine that holds nothing.
func releaseElsewhere(m *mutex.Mutex) <-chan error {
	out := make(chan error, 1)
	go func() { out <- m.Release() }()
	return out
}
