package mutex_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A hold nobody waited on whose link went down before its lease ran out
// was lost to the cut first: the first reason stands, as it does for a
// hold that was waited on (TestLeaseDeletesTheNodeOfAHoldLostToACutFirst
// WhoseSessionSurvives). Its Err and Release must say suspended, not that
// the lease ran out.
func TestUnwatchedHoldCutBeforeItsLeaseEndsSaysSuspendedNotExpired(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithSessionTimeout(testkit.CutSessionTimeout))
	leased := newMutex(t, c, "/locks/lazy-lease", mutex.WithLeaseTime(12*time.Second))
	obs := newClient(t, cl.Addrs())

	h, err := leased.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	end, _ := h.Expiry()
	s := c.Session() // taken while the link is up: its Suspended is the cut

	p.Blackhole()
	testkit.WaitClosed(t, s.Suspended, 10*time.Second, "the cut's suspension")
	require.True(t, time.Now().Before(end), "the cut took longer than the lease")
	p.Heal()
	_, err = c.WaitConnected(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Equal(t, s.ID, c.Session().ID, "the session did not survive the cut")

	// The lease's end deletes the node: only then look at the hold.
	waitNodes(t, obs, "/locks/lazy-lease", 0)
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSuspended, "the cut came first")
	assert.NotErrorIs(t, h.Err(), zkrecipes.ErrLeaseExpired, "the cut came first")
	err = h.Release()
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrSuspended, "the cut came first")
}

// A hold nobody waited on whose link went down, then whose client was
// closed: it was lost to the cut first, and says so, as a hold that was
// waited on does.
func TestUnwatchedHoldCutBeforeItsClientClosesSaysSuspended(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithSessionTimeout(testkit.CutSessionTimeout))
	m := newMutex(t, c, "/locks/lazy-close")

	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	s := c.Session()

	p.Blackhole()
	testkit.WaitClosed(t, s.Suspended, 10*time.Second, "the cut's suspension")
	// Back under the same session before Close: the cut is well behind.
	p.Heal()
	_, err = c.WaitConnected(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Equal(t, s.ID, c.Session().ID, "the session did not survive the cut")
	require.NoError(t, c.Close())
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSuspended, "the cut came before Close")
}

// mutex's doc: a hold's loss signal "also fires when the hold's node is
// deleted or re-created by someone else", and "a nested Acquire on a
// lost hold returns an error wrapping zkrecipes.ErrHoldLost". A hold
// nobody waited on whose node someone else deleted, and that the next
// waiter then took: however long after, the holder's goroutine must not
// be handed one more acquisition of it. The wait is on the loss's log
// line, which a hold that follows its node writes a round trip after the
// deletion.
func TestNestedAcquireOfAnUnwatchedHoldWhoseNodeWasDeletedIsRefused(t *testing.T) {
	cl := zktest.Standalone(t)
	var buf testkit.SyncBuffer
	c := newClient(t, cl.Addrs(), framework.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	m := newMutex(t, c, "/locks/lazy-deleted")
	adv := newClient(t, cl.Addrs())
	other := newMutex(t, adv, "/locks/lazy-deleted")

	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	got := acquireAsync(other, 30*time.Second)
	waitNodes(t, adv, "/locks/lazy-deleted", 2)
	require.NoError(t, adv.Delete(ctxT(t, 10*time.Second), h.Path(), -1))
	g := <-got
	require.NoError(t, g.err, "the next waiter is granted once the node is gone")
	t.Cleanup(func() { _ = g.release() })

	// Nobody waited on h: it learns at the nested acquire, which reads
	// its node first (engine.Node.Confirm), and says so then.
	again, err := m.Acquire(ctxT(t, 10*time.Second))
	if err == nil {
		_ = again.Release()
	}
	assert.ErrorIs(t, err, zkrecipes.ErrNodeDeleted, "a nested acquisition of a node another session's holder replaced")
	assert.Contains(t, buf.String(), "reason=node_deleted", "the loss is logged when learned")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
}

// A hold's watchers that start late still get the directory's change
// (Grant.Changed) that fired while nobody waited: once its holder waits
// on it, a hold whose node was deleted while nobody watched ends.
func TestHoldWaitedOnAfterItsNodeWasDeletedEnds(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	adv := newClient(t, cl.Addrs())
	for _, busy := range []bool{false, true} {
		dir := fmt.Sprintf("/locks/lazy-late-%v", busy)
		m := newMutex(t, c, dir)
		h, err := m.Acquire(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		if busy { // another contender comes and goes first
			_, err := newMutex(t, adv, dir).TryAcquire(ctxT(t, 10*time.Second))
			require.ErrorIs(t, err, zkrecipes.ErrWouldBlock)
		}
		require.NoError(t, adv.Delete(ctxT(t, 10*time.Second), h.Path(), -1))
		waitNodes(t, adv, dir, 0)
		testkit.WaitClosed(t, h.Done(), 10*time.Second, "the deleted node's end")
		assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
		assert.ErrorIs(t, h.Release(), zkrecipes.ErrNodeDeleted)
	}
}

// A hold nobody waited on whose session expired (a cut first, the
// standard policy's signal) says so as a hold that was waited on does:
// suspended, then lost (under the session-only policy, lost), both at its
// Release and at a nested Acquire once the client has a new session. The
// nested acquire's read of the node (engine.Node.Confirm) finds it gone,
// but that is the session's doing, not someone else's deletion: the
// reason, logged and counted, must not be node_deleted.
func TestUnwatchedHoldWhoseSessionExpiredSaysSessionLost(t *testing.T) {
	for _, policy := range []framework.ErrorPolicy{framework.StandardPolicy, framework.SessionOnlyPolicy} {
		for _, nested := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/nested=%v", policy, nested), func(t *testing.T) {
				cl := zktest.Standalone(t)
				p := cl.NewProxy()
				var buf testkit.SyncBuffer
				c := newClient(t, p.Addrs(), framework.WithSessionTimeout(3*time.Second), framework.WithErrorPolicy(policy),
					framework.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
				m := newMutex(t, c, "/locks/lazy-expired")
				h, err := m.Acquire(ctxT(t, 10*time.Second))
				require.NoError(t, err)
				s := c.Session()
				zktest.ExpireSession(t, p, s.ID)
				testkit.WaitClosed(t, s.Lost, 15*time.Second, "the session's loss")
				if nested {
					_, err = c.WaitConnected(ctxT(t, 15*time.Second))
					require.NoError(t, err)
					require.NotEqual(t, s.ID, c.Session().ID, "a new session")
					again, aerr := m.Acquire(ctxT(t, 10*time.Second))
					if aerr == nil {
						_ = again.Release()
					}
					require.Error(t, aerr, "a nested acquisition of a lost hold")
					err = aerr
					_ = h.Release()
				} else {
					err = h.Release()
					assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
				}
				assert.ErrorIs(t, err, zkrecipes.ErrSessionLost)
				assert.NotErrorIs(t, err, zkrecipes.ErrNodeDeleted, "the session's loss, not someone else's delete")
				if policy == framework.StandardPolicy {
					assert.ErrorIs(t, err, zkrecipes.ErrSuspended, "the cut came first")
				} else {
					assert.NotErrorIs(t, err, zkrecipes.ErrSuspended)
				}
				assert.NotContains(t, buf.String(), "reason=node_deleted")
			})
		}
	}
}

// Under the session-only policy a hold is trusted while its session may
// come back, link down or not, and the goroutine holding a lock acquires
// it again without a round trip (package reentrant's doc). A nested
// Acquire of a hold nobody waited on, while the link is down, must not
// wait on the link: it either answers at once or fails, not stall for
// the caller's whole deadline on a read that cannot be answered.
func TestNestedAcquireOfAnUnwatchedHoldDoesNotWaitOnADownLink(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithSessionTimeout(20*time.Second), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	m := newMutex(t, c, "/locks/lazy-nested-down")
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	s := c.Session()
	p.Blackhole()
	testkit.WaitClosed(t, s.Suspended, 15*time.Second, "the cut's suspension")
	t.Cleanup(p.Heal)

	start := time.Now()
	again, err := m.Acquire(ctxT(t, 8*time.Second))
	took := time.Since(start)
	if err == nil {
		_ = again.Release()
	}
	assert.Less(t, took, 2*time.Second, "a nested acquire waited on the link (err %v)", err)
	p.Heal()
	_ = h.Release()
}

// TestNestedAcquireOfAnUnwatchedHoldWhoseNodeWasDeletedIsRefused, with a
// first look at the hold just before the nested Acquire (Held, Err, Done
// or Context: what a careful holder does): the look starts the node's
// watchers, which learn of the deletion a round trip later. A nested
// Acquire meanwhile must still read the node (engine.Node.Confirm), not
// take the watchers' start for their verdict: the deletion is long past,
// and a hold followed from its grant would have known it.
func TestNestedAcquireJustAfterAFirstLookAtADeletedHoldIsRefused(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	adv := newClient(t, cl.Addrs())
	looks := map[string]func(h *hold.Hold, m *mutex.Mutex){
		"Held":    func(_ *hold.Hold, m *mutex.Mutex) { m.Held() },
		"Err":     func(h *hold.Hold, _ *mutex.Mutex) { _ = h.Err() },
		"Done":    func(h *hold.Hold, _ *mutex.Mutex) { _ = h.Done() },
		"Context": func(h *hold.Hold, _ *mutex.Mutex) { _ = h.Context(t.Context()) },
	}
	for name, look := range looks {
		t.Run(name, func(t *testing.T) {
			dir := "/locks/lazy-look-" + name
			m := newMutex(t, c, dir)
			other := newMutex(t, adv, dir)
			h, err := m.Acquire(ctxT(t, 10*time.Second))
			require.NoError(t, err)
			got := acquireAsync(other, 30*time.Second)
			waitNodes(t, adv, dir, 2)
			require.NoError(t, adv.Delete(ctxT(t, 10*time.Second), h.Path(), -1))
			g := <-got
			require.NoError(t, g.err, "the next waiter is granted once the node is gone")
			t.Cleanup(func() { _ = g.release() })

			look(h, m)
			again, err := m.Acquire(ctxT(t, 10*time.Second))
			if err == nil {
				_ = again.Release()
			}
			assert.ErrorIs(t, err, zkrecipes.ErrNodeDeleted, "a nested acquisition while another holds the lock")
			_ = h.Release()
		})
	}
}
