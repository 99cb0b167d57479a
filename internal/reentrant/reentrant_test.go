package reentrant

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/testkit"
)

// The goroutine's Release picks its most recent acquisition; if another
// goroutine releases that same Hold through its handle in the meantime,
// Release gives back the next one instead of reporting zkrecipes.ErrNotHeld while
// the goroutine still holds. The other release is made to land between the
// pick and the release.
func TestReleaseRacingAHandleReleaseGivesBackTheNextAcquisition(t *testing.T) {
	cl := zktest.Standalone(t)
	c := testkit.Client(t, cl.Addrs())
	l := New(c, "mutex", metrics.Mutex, contend.Request{Dir: "/re/race", Name: "lock-", Driver: contend.First(1)}, false, 0)
	t.Cleanup(func() { l.Close() })
	h1, err := l.Acquire(testkit.Ctx(t, 10*time.Second), false)
	require.NoError(t, err)
	h2, err := l.Acquire(testkit.Ctx(t, 10*time.Second), false)
	require.NoError(t, err)

	testHookAfterPick = func() {
		testHookAfterPick = nil
		done := make(chan error)
		go func() { done <- h2.Release() }() // another goroutine, through the handle
		require.NoError(t, <-done)
	}
	t.Cleanup(func() { testHookAfterPick = nil })
	require.NoError(t, l.Release(), "the goroutine still held h1")
	assert.ErrorIs(t, h1.Err(), zkrecipes.ErrReleased)
	_, held := l.Held()
	assert.False(t, held)
}
