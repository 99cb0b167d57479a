package rwlock_test

import (
	"context"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
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
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

var (
	newClient = testkit.Client
	ctxT      = testkit.Ctx
	nodes     = testkit.Children
	waitNodes = testkit.WaitChildren
)

func newRW(t testing.TB, c *framework.Client, path string) *rwlock.RWLock {
	t.Helper()
	l, err := rwlock.New(c, path)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// async acquires on a goroutine of its own, which keeps the hold (holds
// belong to the goroutine that took them) and releases when asked.
type async struct {
	got     chan error
	release chan chan error
	hold    *hold.Hold
}

func acquireAsync(l side) *async {
	a := &async{got: make(chan error, 1), release: make(chan chan error)}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		h, err := l.Acquire(ctx)
		a.hold = h
		a.got <- err
		if err == nil {
			r := <-a.release
			r <- l.Release()
		}
	}()
	return a
}

func (a *async) granted(t *testing.T) {
	t.Helper()
	select {
	case err := <-a.got:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("not granted")
	}
}

// blocked asserts the acquire has not completed. An absence can only be
// observed for a while; the callers first wait until the node is queued, so
// a wrong grant would come within one round trip, far inside the window.
func (a *async) blocked(t *testing.T) {
	t.Helper()
	select {
	case err := <-a.got:
		t.Fatalf("granted (err %v) while it should wait", err)
	case <-time.After(300 * time.Millisecond):
	}
}

func (a *async) done(t *testing.T) {
	t.Helper()
	r := make(chan error)
	a.release <- r
	require.NoError(t, <-r)
}

var readNode = regexp.MustCompile(`^_c_[0-9a-f-]{36}-__READ__\d{10}$`)
var writeNode = regexp.MustCompile(`^_c_[0-9a-f-]{36}-__WRIT__\d{10}$`)

func TestReadersShareAndUseCuratorNodeNames(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	a := newRW(t, newClient(t, cl.Addrs()), "/rw/share")
	b := newRW(t, newClient(t, cl.Addrs()), "/rw/share")
	_, err := a.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	h, err := b.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err, "a second reader gets in while the first holds")
	assert.NotZero(t, h.Token())
	for _, n := range nodes(t, obs, "/rw/share") {
		assert.Regexp(t, readNode, n)
	}
	require.NoError(t, a.ReadLock().Release())
	require.NoError(t, b.ReadLock().Release())
}

func TestWriterWaitsForReadersAndReadersWaitForWriter(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	reader := newRW(t, newClient(t, cl.Addrs()), "/rw/x")
	writer := newRW(t, newClient(t, cl.Addrs()), "/rw/x")
	later := newRW(t, newClient(t, cl.Addrs()), "/rw/x")

	_, err := reader.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	w := acquireAsync(writer.WriteLock())
	waitNodes(t, obs, "/rw/x", 2)
	w.blocked(t)
	r := acquireAsync(later.ReadLock())
	waitNodes(t, obs, "/rw/x", 3)
	r.blocked(t) // queued behind the writer

	require.NoError(t, reader.ReadLock().Release())
	w.granted(t)
	assert.Regexp(t, writeNode, framework.Base(w.hold.Path()))
	r.blocked(t)
	w.done(t)
	r.granted(t)
	r.done(t)
}

// kazoo #649: a reader must never wait on a writer that queued after it.
func TestReaderIsNeverHeldUpByALaterWriter(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	first := newRW(t, newClient(t, cl.Addrs()), "/rw/649")
	reader := newRW(t, newClient(t, cl.Addrs()), "/rw/649")
	second := newRW(t, newClient(t, cl.Addrs()), "/rw/649")

	_, err := first.WriteLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	r := acquireAsync(reader.ReadLock())
	waitNodes(t, obs, "/rw/649", 2)
	w2 := acquireAsync(second.WriteLock())
	waitNodes(t, obs, "/rw/649", 3)

	require.NoError(t, first.WriteLock().Release())
	r.granted(t) // despite the writer waiting behind it
	w2.blocked(t)
	r.done(t)
	w2.granted(t)
	w2.done(t)
}

func TestWritersAreExclusiveAndFIFO(t *testing.T) {
	cl := zktest.Standalone(t)
	var inside atomic.Int32
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		l := newRW(t, newClient(t, cl.Addrs()), "/rw/fifo")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 5; r++ {
				h, err := l.WriteLock().Acquire(ctxT(t, 60*time.Second))
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, int32(1), inside.Add(1), "two writers inside")
				mu.Lock()
				order = append(order, h.Path()[len(h.Path())-10:])
				mu.Unlock()
				time.Sleep(time.Millisecond) // hold briefly so others queue
				inside.Add(-1)
				assert.NoError(t, l.WriteLock().Release())
			}
		}()
	}
	wg.Wait()
	for i := 1; i < len(order); i++ {
		assert.Less(t, order[i-1], order[i], "writers granted out of order")
	}
}

func TestDowngradeKeepsQueuedWriterOut(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	l := newRW(t, newClient(t, cl.Addrs()), "/rw/down")
	other := newRW(t, newClient(t, cl.Addrs()), "/rw/down")

	wh, err := l.WriteLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	w2 := acquireAsync(other.WriteLock())
	waitNodes(t, obs, "/rw/down", 2)

	rh, err := l.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err, "the write holder gets the read lock at once")
	assert.Regexp(t, readNode, framework.Base(rh.Path()))
	assert.Equal(t, wh.Path()[len(wh.Path())-10:], rh.Path()[len(rh.Path())-10:], "the read node takes the write node's place")
	assert.Greater(t, rh.Token(), wh.Token())

	require.NoError(t, l.WriteLock().Release())
	w2.blocked(t) // the downgraded read keeps the queued writer out
	require.NoError(t, l.ReadLock().Release())
	w2.granted(t)
	w2.done(t)
}

func TestUpgradeIsRefusedAtOnce(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := newRW(t, c, "/rw/up")
	_, err := l.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	_, err = l.WriteLock().Acquire(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	assert.Len(t, nodes(t, c, "/rw/up"), 1, "no write node was made")
	require.NoError(t, l.ReadLock().Release())
}

func TestBothSidesAreReentrant(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := newRW(t, c, "/rw/re")
	ctx := ctxT(t, 10*time.Second)
	for _, side := range []side{l.ReadLock(), l.WriteLock()} {
		h1, err := side.Acquire(ctx)
		require.NoError(t, err)
		h2, err := side.Acquire(ctx)
		require.NoError(t, err)
		assert.NotSame(t, h1, h2, "each acquisition is a handle of its own")
		assert.Equal(t, h1.Token(), h2.Token())
		require.NoError(t, side.Release())
		require.NoError(t, side.Release())
		assert.ErrorIs(t, side.Release(), zkrecipes.ErrNotHeld)
		assert.Empty(t, nodes(t, c, "/rw/re"))
	}
}

func TestWriterCutOffLearnsAndTimedOutWaiterLeavesNoNode(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	p := cl.NewProxy()
	holder := newRW(t, newClient(t, p.Addrs()), "/rw/loss")
	waiterClient := newClient(t, cl.Addrs())
	waiter := newRW(t, waiterClient, "/rw/loss")

	h, err := holder.WriteLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	_, err = waiter.ReadLock().Acquire(ctxT(t, 300*time.Millisecond))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, waiterClient.Drain(ctxT(t, 10*time.Second)))
	waitNodes(t, obs, "/rw/loss", 1)

	p.Blackhole()
	select {
	case <-h.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the cut-off writer never learned")
	}
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrSuspended)
	p.Heal()
	assert.ErrorIs(t, holder.WriteLock().Release(), zkrecipes.ErrHoldLost)
}

func TestReadAndWriteLocksComposeInAMultiLock(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	a, b := newRW(t, c, "/rw/a"), newRW(t, c, "/rw/b")
	ml, err := mutex.NewMultiLock(a.WriteLock(), b.ReadLock())
	require.NoError(t, err)
	holds, err := ml.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Len(t, holds, 2)
	require.NoError(t, hold.ReleaseAll(holds...))
}

func TestBadInput(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, err := rwlock.New(nil, "/rw")
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidArgument)
	_, err = rwlock.New(c, "rw")
	assert.ErrorIs(t, err, zkrecipes.ErrInvalidPath)
	_, err = rwlock.New(c, "/rw", rwlock.WithParticipantID(""))
	assert.Error(t, err)
	l, err := rwlock.New(c, "/rw/closed")
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, err = l.ReadLock().Acquire(ctxT(t, time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	_, err = l.WriteLock().Acquire(ctxT(t, time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	assert.Empty(t, nodes(t, c, "/rw/closed"))
}

// The lock reports its queue as every recipe does: both sides' nodes and
// participant ids in queue order, and whether this process holds either
// side.
func TestRWLockReportsItsQueueAndWhetherItHolds(t *testing.T) {
	cl := zktest.Standalone(t)
	writer, err := rwlock.New(newClient(t, cl.Addrs()), "/rw/queue", rwlock.WithParticipantID("writer"))
	require.NoError(t, err)
	t.Cleanup(func() { writer.Close() })
	reader, err := rwlock.New(newClient(t, cl.Addrs()), "/rw/queue", rwlock.WithParticipantID("reader"))
	require.NoError(t, err)
	t.Cleanup(func() { reader.Close() })

	w, err := writer.WriteLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	r := acquireAsync(reader.ReadLock())
	waitNodes(t, newClient(t, cl.Addrs()), "/rw/queue", 2)

	ids, err := writer.Participants(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, []string{"writer", "reader"}, ids)
	paths, err := reader.ParticipantNodes(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Len(t, paths, 2)
	assert.Equal(t, w.Path(), paths[0])
	assert.True(t, (len(writer.Holds()) > 0))
	assert.False(t, (len(reader.Holds()) > 0))

	require.NoError(t, w.Release())
	r.granted(t)
	assert.True(t, (len(reader.Holds()) > 0))
	assert.False(t, (len(writer.Holds()) > 0))
	r.done(t)
}
