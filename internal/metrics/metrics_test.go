package metrics_test

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
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// Every instrument of docs/production.md's table moves, with its
// documented unit, through the life of a client that uses every recipe:
// acquires, a wait behind another contender, losses of each kind, a change
// of leadership and a guaranteed delete that has to wait for the link. One
// provider (an in-memory reader) serves every client of the test, as it
// would serve a process.
func TestEveryDocumentedInstrumentMoves(t *testing.T) {
	cl := zktest.Standalone(t)
	m := newMeters(t)
	pa := cl.NewProxy()
	a := m.client(t, pa.Addrs())
	other := testkit.Client(t, cl.Addrs()) // a contender of another process; not measured
	ctx := testkit.Ctx(t, 2*time.Minute)

	t.Run("the first session is counted", func(t *testing.T) {
		assert.EqualValues(t, 1, m.value(t, metrics.SessionEstablished))
		assert.EqualValues(t, 1, m.value(t, metrics.SessionStateChanges, state("connected")))
		assert.EqualValues(t, 1, m.value(t, metrics.SessionConnected))
	})

	t.Run("acquire: every kind, held while held", func(t *testing.T) {
		mu, err := mutex.New(a, "/acquire/mutex")
		require.NoError(t, err)
		rw, err := rwlock.New(a, "/acquire/rwlock")
		require.NoError(t, err)
		sem, err := semaphore.New(a, "/acquire/semaphore", 3)
		require.NoError(t, err)
		sm, err := mutex.NewSemaphoreMutex(a, "/acquire/semaphore-mutex")
		require.NoError(t, err)
		t.Cleanup(func() { mu.Close(); rw.Close(); sem.Close(); sm.Close() })

		var holds []*hold.Hold
		take := func(h *hold.Hold, err error) {
			t.Helper()
			require.NoError(t, err)
			holds = append(holds, h)
		}
		take(mu.Acquire(ctx))
		take(rw.WriteLock().Acquire(ctx))
		take(rw.ReadLock().Acquire(ctx)) // a downgrade: held, not waited for
		leases, err := sem.Acquire(ctx, 2)
		require.NoError(t, err)
		holds = append(holds, leases...)
		take(sm.Acquire(ctx))

		for k, held := range map[string]int64{"mutex": 1, "rwlock_write": 1, "rwlock_read": 1, "semaphore": 2, "semaphore_mutex": 1} {
			assert.Equal(t, held, m.value(t, metrics.HoldActive, kind(k)), "%s holds", k)
		}
		for _, k := range []string{"mutex", "rwlock_write", "semaphore", "semaphore_mutex"} {
			assert.EqualValues(t, 1, m.count(t, metrics.AcquireDuration, kind(k), outcome("acquired")), "%s acquires", k)
		}
		for _, h := range holds {
			require.NoError(t, h.Release())
		}
		for _, k := range []string{"mutex", "rwlock_write", "rwlock_read", "semaphore", "semaphore_mutex"} {
			assert.Zero(t, m.value(t, metrics.HoldActive, kind(k)), "%s released", k)
		}
		// Every recipe's requests went through the framework: the queue
		// node's create, the queue's listing, the hold's own watch, the
		// release's delete.
		for _, o := range []string{"create", "children", "get", "delete"} {
			assert.Positive(t, m.count(t, metrics.RequestDuration, op(o)), "%s requests", o)
		}
		_, _, err = a.Get(ctx, "/acquire/nothing-here")
		require.Error(t, err)
		assert.EqualValues(t, 1, m.count(t, metrics.RequestDuration, op("get"), metrics.KeyErrorType.String("no_node")))
	})

	t.Run("acquire: leaders lead while they lead", func(t *testing.T) {
		latch, err := leader.NewLatch(a, "/acquire/latch")
		require.NoError(t, err)
		t.Cleanup(func() { latch.Close() })
		running, stop := make(chan struct{}), make(chan struct{})
		sel, err := leader.NewSelector(a, "/acquire/selector", func(ctx context.Context, _ *hold.Hold) error {
			close(running)
			select {
			case <-stop:
			case <-ctx.Done():
			}
			return nil
		})
		require.NoError(t, err)
		t.Cleanup(func() { sel.Close() })
		require.NoError(t, latch.Start(context.Background()))
		require.NoError(t, sel.Start(context.Background()))
		_, err = latch.Await(ctx)
		require.NoError(t, err)
		testkit.WaitClosed(t, running, 30*time.Second, "the selector did not run its job")

		for _, k := range []string{"latch", "selector"} {
			assert.EqualValues(t, 1, m.value(t, metrics.LeaderLeading, kind(k)), "%s leads", k)
			assert.EqualValues(t, 1, m.value(t, metrics.HoldActive, kind(k)), "%s holds its term", k)
			assert.EqualValues(t, 1, m.count(t, metrics.AcquireDuration, kind(k), outcome("acquired")), "%s acquires", k)
		}
		assert.EqualValues(t, 1, m.count(t, metrics.AcquireDuration, kind("mutex"), outcome("acquired")),
			"the selector's mutex counts as the selector, not as a mutex")
		close(stop)
		m.waitValue(t, 0, metrics.LeaderLeading, kind("selector"))
		require.NoError(t, latch.Close())
		m.waitValue(t, 0, metrics.LeaderLeading, kind("latch"))
		assert.Zero(t, m.value(t, metrics.HoldActive, kind("latch")))
	})

	t.Run("wait: behind another contender", func(t *testing.T) {
		theirs, err := mutex.New(other, "/wait")
		require.NoError(t, err)
		t.Cleanup(func() { theirs.Close() })
		mine, err := mutex.New(a, "/wait")
		require.NoError(t, err)
		t.Cleanup(func() { mine.Close() })
		held, err := theirs.Acquire(ctx)
		require.NoError(t, err)

		_, err = mine.TryAcquire(ctx)
		require.ErrorIs(t, err, zkrecipes.ErrWouldBlock)
		assert.EqualValues(t, 1, m.count(t, metrics.AcquireDuration, kind("mutex"), outcome("would_block")))

		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err = mine.Acquire(short)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualValues(t, 1, m.count(t, metrics.AcquireDuration, kind("mutex"), outcome("timeout")))

		gone, cancel := context.WithCancel(ctx)
		cancel()
		_, err = mine.Acquire(gone)
		require.ErrorIs(t, err, context.Canceled)
		assert.EqualValues(t, 1, m.count(t, metrics.AcquireDuration, kind("mutex"), outcome("cancelled")))

		before := m.sum(t, metrics.AcquireDuration, kind("mutex"), outcome("acquired"))
		got := make(chan error, 1)
		go func() {
			h, err := mine.Acquire(ctx)
			if err == nil {
				err = h.Release()
			}
			got <- err
		}()
		testkit.WaitChildren(t, other, "/wait", 2)
		queued := time.Now() // the acquire began before this
		require.NoError(t, held.Release())
		released := time.Now()
		require.NoError(t, <-got)
		waited := m.sum(t, metrics.AcquireDuration, kind("mutex"), outcome("acquired")) - before
		assert.GreaterOrEqual(t, waited, released.Sub(queued).Seconds(), "the wait is in the acquire's duration")
	})

	t.Run("loss: the link in doubt", func(t *testing.T) {
		mu, err := mutex.New(a, "/loss/suspended")
		require.NoError(t, err)
		t.Cleanup(func() { mu.Close() })
		h, err := mu.Acquire(ctx)
		require.NoError(t, err)
		pa.Blackhole()
		testkit.WaitClosed(t, h.Done(), 30*time.Second, "the hold was not lost")
		// Looked at at once: the session must not expire meanwhile.
		assert.Zero(t, m.value(t, metrics.SessionConnected), "not connected while suspended")
		pa.Heal()
		m.waitValue(t, 1, metrics.HoldLosses, kind("mutex"), reason("suspended"))
		assert.Zero(t, m.value(t, metrics.HoldActive, kind("mutex")))
		assert.EqualValues(t, 1, m.value(t, metrics.SessionStateChanges, state("suspended")))
		m.waitValue(t, 1, metrics.SessionStateChanges, state("reconnected"))
		m.waitValue(t, 1, metrics.SessionConnected)
		require.ErrorIs(t, h.Release(), zkrecipes.ErrHoldLost)
	})

	t.Run("loss: the node deleted by someone else", func(t *testing.T) {
		mu, err := mutex.New(a, "/loss/deleted")
		require.NoError(t, err)
		t.Cleanup(func() { mu.Close() })
		h, err := mu.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, other.Delete(ctx, h.Path(), -1))
		testkit.WaitClosed(t, h.Done(), 30*time.Second, "the hold was not lost")
		m.waitValue(t, 1, metrics.HoldLosses, kind("mutex"), reason("node_deleted"))
		_ = h.Release()
	})

	t.Run("loss: the session expired", func(t *testing.T) {
		sessions := m.value(t, metrics.SessionEstablished)
		pb := cl.NewProxy()
		b := m.client(t, pb.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
		sem, err := semaphore.New(b, "/loss/session", 1)
		require.NoError(t, err)
		t.Cleanup(func() { sem.Close() })
		leases, err := sem.Acquire(ctx, 1)
		require.NoError(t, err)
		testkit.LoseSession(t, pb, b)
		testkit.WaitClosed(t, leases[0].Done(), 30*time.Second, "the lease was not lost")
		m.waitValue(t, 1, metrics.HoldLosses, kind("semaphore"), reason("session_lost"))
		m.waitAtLeast(t, 1, metrics.SessionStateChanges, state("lost"))
		m.waitValue(t, sessions+2, metrics.SessionEstablished) // b's first, and its next after the expiry
		_ = leases[0].Release()
	})

	t.Run("loss: the client closed under the hold", func(t *testing.T) {
		c := m.client(t, cl.Addrs())
		mu, err := mutex.New(c, "/loss/closed")
		require.NoError(t, err)
		h, err := mu.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, c.Close())
		testkit.WaitClosed(t, h.Done(), 30*time.Second, "the hold did not end")
		m.waitValue(t, 1, metrics.HoldLosses, kind("mutex"), reason("closed"))
		_ = mu.Close()
	})

	t.Run("leadership changes hands, and comes back after a cut", func(t *testing.T) {
		theirs, err := leader.NewLatch(other, "/leadership")
		require.NoError(t, err)
		t.Cleanup(func() { theirs.Close() })
		require.NoError(t, theirs.Start(context.Background()))
		_, err = theirs.Await(ctx)
		require.NoError(t, err)

		mine, err := leader.NewLatch(a, "/leadership")
		require.NoError(t, err)
		t.Cleanup(func() { mine.Close() })
		require.NoError(t, mine.Start(context.Background()))
		testkit.WaitChildren(t, other, "/leadership", 2)
		assert.Zero(t, m.value(t, metrics.LeaderLeading, kind("latch")), "queued, not leading")

		require.NoError(t, theirs.Close()) // the leader leaves: ours leads
		_, err = mine.Await(ctx)
		require.NoError(t, err)
		m.waitValue(t, 1, metrics.LeaderLeading, kind("latch"))

		sub := mine.Subscribe()
		defer sub.Close()
		require.True(t, (<-sub.Changes()).Leader, "first, where it stands")
		pa.Cut() // a brief cut: the term ends, then the same node leads again
		ended := <-sub.Changes()
		require.False(t, ended.Leader)
		m.waitAtLeast(t, 1, metrics.HoldLosses, kind("latch"), reason("suspended"))
		again := <-sub.Changes()
		require.True(t, again.Leader)
		m.waitValue(t, 1, metrics.LeaderLeading, kind("latch"))
		assert.EqualValues(t, 3, m.count(t, metrics.AcquireDuration, kind("latch"), outcome("acquired")),
			"the earlier test's term, this one's, and the one after the cut")
	})

	t.Run("a guaranteed delete waits for the link", func(t *testing.T) {
		_, err := a.Create(ctx, "/pending", nil)
		require.NoError(t, err)
		assert.Zero(t, m.value(t, metrics.DeletePending))
		pa.Blackhole()
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err = a.Delete(short, "/pending", -1, framework.Guaranteed())
		cancel()
		require.ErrorIs(t, err, zkrecipes.ErrDeferred)
		assert.EqualValues(t, 1, m.value(t, metrics.DeletePending))
		pa.Heal()
		m.waitValue(t, 0, metrics.DeletePending)
		ok, _, err := other.Exists(ctx, "/pending")
		require.NoError(t, err)
		assert.False(t, ok, "the delete went through")
	})

	t.Run("every documented instrument moved, with its unit", func(t *testing.T) {
		var names []string
		for _, in := range metrics.Instruments {
			names = append(names, in.Name)
			unit, ok := m.unitOf(in.Name)
			if assert.True(t, ok, "%s never collected", in.Name) {
				assert.Equal(t, in.Unit, unit, "unit of %s", in.Name)
			}
		}
		assert.ElementsMatch(t, names, m.movedNames())
	})
}
