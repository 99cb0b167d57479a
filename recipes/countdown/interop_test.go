package countdown_test

// There is no countdown latch in Curator; the latch keeps its remaining
// count in Curator SharedCount's format, so Curator 5.4's SharedCount,
// driven through the Java Agent of internal/curator, reads it, and a
// SharedCount set to zero opens the latch.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

const agentSession = 10 * time.Second

func TestCuratorSharedCountReadsTheRemainingCount(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := setLatch(t, c, "/latches/interop", 3)
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	assert.Equal(t, "count /latches/interop 3", java.Call(t, "count-get /latches/interop", "count ", 10*time.Second))
	for _, want := range []string{"count /latches/interop 2", "count /latches/interop 1"} {
		ok, err := l.CountDown(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, want, java.Call(t, "count-get /latches/interop", "count ", 10*time.Second))
	}
}

func TestCuratorSharedCountSetToZeroOpensTheLatch(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := setLatch(t, c, "/latches/interop-open", 2)
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)
	got := waitAsync(ctxT(t, 30*time.Second), l)
	stillWaiting(t, got, absenceWindow)

	java.Call(t, "count-set /latches/interop-open 0", "count-set ", 10*time.Second)
	require.NoError(t, receive(t, got, 10*time.Second))
	ok, err := l.CountDown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.False(t, ok, "open: nothing to count")
	assert.False(t, exists(t, c, "/latches/interop-open"), "the count-down that found it open deleted it")
}
