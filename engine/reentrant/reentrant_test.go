package reentrant

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// The goroutine's Release picks its most recent acquisition; if another
// goroutine releases that same Hold through its handle in the meantime,
// Release gives back the next one instead of reporting zkrecipes.ErrNotHeld
// while the goroutine still holds.
//
// Nothing goes on the wire between the pick and the release (the handle's
// release of a reentered hold is bookkeeping), so no fault of the harness
// can stop the goroutine there. The test holds the lock's mutex instead:
// the goroutine's Release waits for it to pick, then the handle's release
// marks h2 released and waits for it to take h2 out of the goroutine's
// acquisitions. Let go, the mutex goes to the first of them to wait (its
// waiters are woken in order), so the goroutine picks h2, which is
// released by then.
func TestReleaseRacingAHandleReleaseGivesBackTheNextAcquisition(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	l := New(c, Config{Recipe: "mutex", Kind: "mutex", Request: engine.Request{Dir: "/re/race", Name: "lock-", Driver: engine.First(1)}})
	t.Cleanup(func() { l.Close() })
	g := testkit.NewGoroutine(t) // the holder
	var h1, h2 *hold.Hold
	require.NoError(t, g.Do(func() (err error) { h1, err = l.Acquire(testkit.Ctx(t, 10*time.Second), false); return err }))
	require.NoError(t, g.Do(func() (err error) { h2, err = l.Acquire(testkit.Ctx(t, 10*time.Second), false); return err }))

	l.mu.Lock()
	unlock := sync.OnceFunc(l.mu.Unlock)
	defer unlock() // on a failure below, before the cleanup's Close
	byGoroutine, byHandle := make(chan error, 1), make(chan error, 1)
	go func() { byGoroutine <- g.Do(l.Release) }()
	waitOnMutex(t, "reentrant.(*Lock).release(")
	go func() { byHandle <- h2.Release() }() // another goroutine, through the handle
	waitOnMutex(t, "(*Lock).releaser.func")
	unlock()

	require.NoError(t, <-byHandle)
	require.NoError(t, <-byGoroutine, "the goroutine still held h1")
	assert.ErrorIs(t, h1.Err(), zkrecipes.ErrReleased)
	require.NoError(t, g.Do(func() error {
		if _, held := l.Held(); held {
			return errors.New("still held")
		}
		return nil
	}))
}

// waitOnMutex waits until a goroutine whose stack has fn in it waits for a
// mutex.
func waitOnMutex(t *testing.T, fn string) {
	t.Helper()
	require.Eventually(t, func() bool {
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, fn) && strings.Contains(g, "sync.(*Mutex).Lock") {
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "no goroutine in %s waits for a mutex", fn)
}
