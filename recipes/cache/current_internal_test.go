package cache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// The engine finds nothing left to read and decides the view is current;
// before it says so, the link drops and the session's follower makes the
// view stale (a real Suspended, from a cut link, and the Reconnected on the
// same session after it). The view must stay stale until it has been read
// again: a Current after that Stale would say the view follows the server
// while the gap is unread, and no Stale would come again.
func TestSuspendedBetweenTheEnginesLastReadAndCurrentKeepsTheViewStale(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	client := testkit.Client(t, p.Addrs())
	c, err := New(client, "/quiet", Single())
	require.NoError(t, err)
	// A view read and current, as Start leaves it.
	c.stale = nil
	close(c.loaded)
	sub := c.Subscribe()
	t.Cleanup(sub.Close)
	require.Equal(t, Snapshot, (<-sub.Changes()).Type)

	require.True(t, c.rt.Go(c.followSession))
	t.Cleanup(func() { _ = c.rt.Close(nil) })

	// The engine is between its decision and goCurrent: the link drops.
	stale := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.stale != nil
	}
	require.Eventually(t, func() bool {
		p.Cut() // again, until the follower (subscribed on its own goroutine) hears one
		return stale()
	}, 30*time.Second, 500*time.Millisecond)
	_, err = client.WaitConnected(testkit.Ctx(t, 30*time.Second))
	require.NoError(t, err)

	c.goCurrent()

	assert.True(t, stale(), "the view is current with the gap unread")
	// What the subscription got, to its end.
	c.mu.Lock()
	c.feed.End(nil)
	c.mu.Unlock()
	var types []EventType
	for ev := range sub.Changes() {
		types = append(types, ev.Type)
		if ev.Type == Stale {
			assert.ErrorIs(t, ev.Err, zkrecipes.ErrSuspended)
		}
	}
	assert.Equal(t, []EventType{Stale}, types, "a Current after the Stale of an unread gap")
}
