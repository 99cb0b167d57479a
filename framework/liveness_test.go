package framework_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Proof of life is a reply to one of this client's own requests or pings.
// Under a one-way fault that drops its requests while the server's watch
// events still reach it, the client must suspend at 2/3 of the session
// timeout, while the server still holds the session: events must not count
// as a live link. (Before the fix it suspended only when the server
// expired the session and closed the link.)
func TestRequestsDroppedSuspendsDespiteWatchEvents(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	const timeout = 4 * time.Second
	c := dial(t, p.Addrs(), framework.WithSessionTimeout(timeout))
	other := dial(t, cl.Addrs())

	// One watch per node: each change of another client's reaches c as one
	// event, so a stream of changes is a stream of events through the fault.
	const n = 160
	for i := range n {
		_, err := other.Create(t.Context(), fmt.Sprintf("/w%d", i), nil)
		require.NoError(t, err)
		_, _, _, err = c.GetW(t.Context(), fmt.Sprintf("/w%d", i))
		require.NoError(t, err)
	}
	s := c.Session()

	p.DropRequests()
	start := time.Now()
	stop := testkit.Repeat(40*time.Millisecond, n, func(i int) {
		_, _ = other.Set(t.Context(), fmt.Sprintf("/w%d", i), []byte("x"), -1)
	})
	defer stop()

	select {
	case <-s.Suspended:
	case <-time.After(timeout + 10*time.Second):
		t.Fatal("never suspended")
	}
	elapsed := time.Since(start)
	alive := cl.SessionAlive(s.ID)
	assert.True(t, alive, "suspended %v after the fault began, only once the server had expired the session", elapsed)
	assert.Less(t, elapsed, timeout, "suspended after the whole session timeout")
	p.Heal()
}

// CheckTrust vouches for a session while its link has proof of life, and
// says why not once it has none: the link in doubt, the session lost, the
// client closed.
func TestCheckTrustFollowsTheLinkTheSessionAndTheClient(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := dial(t, p.Addrs(), framework.WithSessionTimeout(2*time.Second))
	s := c.Session()
	require.NoError(t, c.CheckTrust(s))
	// Idle for longer than the bound: the client's own pings prove the link.
	time.Sleep(2 * time.Second)
	require.NoError(t, c.CheckTrust(s), "an idle, healthy link")

	p.DropRequests() // no reply to us from now on; the link looks up for a while
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.ErrorIs(ct, c.CheckTrust(s), zkrecipes.ErrSuspended)
	}, 10*time.Second, 10*time.Millisecond)

	p.Blackhole()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.ErrorIs(ct, c.CheckTrust(s), zkrecipes.ErrSessionLost)
	}, 30*time.Second, 50*time.Millisecond, "simulated expiry")
	p.Heal()
	_, err := c.WaitConnected(t.Context())
	require.NoError(t, err)
	assert.ErrorIs(t, c.CheckTrust(s), zkrecipes.ErrSessionLost, "the old session on a new one")
	require.NoError(t, c.CheckTrust(c.Session()))

	require.NoError(t, c.Close())
	assert.ErrorIs(t, c.CheckTrust(c.Session()), zkrecipes.ErrClosed)
}
