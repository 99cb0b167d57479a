package counter_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/retry"
)

func TestGetOfAMissingNodeIsZeroAndCreatesNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := newLong(t, c, "/counters/missing")
	r, err := l.Get(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.True(t, r.Succeeded)
	assert.Zero(t, r.PreValue)
	assert.Zero(t, r.PostValue)
	_, ok := raw(t, c, "/counters")
	assert.False(t, ok, "a read made a node")
}

func TestIncrementCreatesTheNodeAndParentsAsCuratorsEightByteLong(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := newLong(t, c, "/counters/a/hits")
	r, err := l.Increment(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.True(t, r.Succeeded)
	assert.Equal(t, int64(0), r.PreValue)
	assert.Equal(t, int64(1), r.PostValue)
	assert.Equal(t, 1, r.Stats.OptimisticTries)
	data, _ := raw(t, c, "/counters/a/hits")
	assert.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 1}, data)

	r, err = l.Add(ctxT(t, 10*time.Second), 41)
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.PreValue)
	assert.Equal(t, int64(42), r.PostValue)
	r, err = l.Subtract(ctxT(t, 10*time.Second), 50)
	require.NoError(t, err)
	assert.Equal(t, int64(-8), r.PostValue)
	r, err = l.Decrement(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, int64(-9), r.PostValue)
	assert.Equal(t, int64(-9), rawLong(t, c, "/counters/a/hits"))
}

func TestIntegerIsFourBytesBigEndian(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	i, err := counter.NewInteger(c, "/counters/int")
	require.NoError(t, err)
	defer i.Close()
	r, err := i.Add(ctxT(t, 10*time.Second), 0x01020304)
	require.NoError(t, err)
	assert.Equal(t, int32(0x01020304), r.PostValue)
	data, _ := raw(t, c, "/counters/int")
	assert.Equal(t, []byte{1, 2, 3, 4}, data)
	r, err = i.Add(ctxT(t, 10*time.Second), 0x7fffffff)
	require.NoError(t, err)
	assert.Equal(t, int32(-0x7efdfcfd), r.PostValue, "0x01020304+0x7fffffff wraps, as Java's int")
}

func TestConcurrentIncrementsFromManyClientsSumExactly(t *testing.T) {
	cl := zktest.Standalone(t)
	const clients, each = 4, 15
	var wg sync.WaitGroup
	var mu sync.Mutex
	succeeded := 0
	for range clients {
		l := newLong(t, newClient(t, cl.Addrs()), "/counters/sum", counter.WithOptimisticRetry(retry.NTimes(1000, time.Millisecond)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				r, err := l.Increment(ctxT(t, 30*time.Second))
				if assert.NoError(t, err) && r.Succeeded {
					assert.Equal(t, r.PreValue+1, r.PostValue)
					mu.Lock()
					succeeded++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, clients*each, succeeded)
	assert.Equal(t, int64(succeeded), rawLong(t, newClient(t, cl.Addrs()), "/counters/sum"))
}

func TestCompareAndSetSucceedsOnlyOnTheExpectedValue(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := newLong(t, c, "/counters/cas")
	r, err := l.CompareAndSet(ctxT(t, 10*time.Second), 3, 5)
	require.NoError(t, err)
	assert.False(t, r.Succeeded, "no node holds 0, not 3")
	_, ok := raw(t, c, "/counters/cas")
	assert.False(t, ok, "a compare-and-set that does not match creates nothing")

	created, err := l.Initialize(ctxT(t, 10*time.Second), 7)
	require.NoError(t, err)
	assert.True(t, created)
	created, err = l.Initialize(ctxT(t, 10*time.Second), 9)
	require.NoError(t, err)
	assert.False(t, created, "it exists")

	r, err = l.CompareAndSet(ctxT(t, 10*time.Second), 6, 10)
	require.NoError(t, err)
	assert.False(t, r.Succeeded)
	assert.Equal(t, int64(7), r.PreValue)
	r, err = l.CompareAndSet(ctxT(t, 10*time.Second), 7, 10)
	require.NoError(t, err)
	assert.True(t, r.Succeeded)
	assert.Equal(t, int64(10), r.PostValue)
	assert.Equal(t, int64(10), rawLong(t, c, "/counters/cas"))
}

// Set writes blindly, creating the node; Swap returns the value it
// replaced.
func TestSetOverwritesAndSwapReturnsTheValueItReplaced(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := newLong(t, c, "/counters/set")
	require.NoError(t, l.Set(ctxT(t, 10*time.Second), 3), "creates")
	assert.Equal(t, int64(3), rawLong(t, c, "/counters/set"))
	require.NoError(t, l.Set(ctxT(t, 10*time.Second), -3), "overwrites")
	assert.Equal(t, int64(-3), rawLong(t, c, "/counters/set"))
	r, err := l.Swap(ctxT(t, 10*time.Second), 12)
	require.NoError(t, err)
	assert.True(t, r.Succeeded)
	assert.Equal(t, int64(-3), r.PreValue)
	assert.Equal(t, int64(12), rawLong(t, c, "/counters/set"))
}

func TestBytesKeepsRawBytes(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	v, err := counter.NewBytes(c, "/values/v")
	require.NoError(t, err)
	defer v.Close()
	r, err := v.Get(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Nil(t, r.PreValue)
	r, err = v.Swap(ctxT(t, 10*time.Second), []byte("one"))
	require.NoError(t, err)
	assert.True(t, r.Succeeded)
	r, err = v.CompareAndSet(ctxT(t, 10*time.Second), []byte("one"), []byte("two"))
	require.NoError(t, err)
	assert.True(t, r.Succeeded)
	assert.Equal(t, []byte("one"), r.PreValue)
	data, _ := raw(t, c, "/values/v")
	assert.Equal(t, []byte("two"), data)
}

func TestCorruptDataIsAnErrorAndIsNotOverwritten(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, err := c.Create(ctxT(t, 10*time.Second), "/counters-bad", []byte{1, 2, 3})
	require.NoError(t, err)
	l := newLong(t, c, "/counters-bad")
	_, err = l.Increment(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrBadData)
	_, err = l.Get(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrBadData)
	data, _ := raw(t, c, "/counters-bad")
	assert.Equal(t, []byte{1, 2, 3}, data)
}

// Contention beyond the optimistic tries promotes to the lock, and the
// increment still lands exactly once; the lock leaves no node behind.
func TestPromotionToTheLockWhenOptimisticTriesRunOut(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	const clients, each = 4, 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	succeeded, promoted := 0, 0
	for range clients {
		l := newLong(t, newClient(t, cl.Addrs()), "/counters/promo",
			counter.WithOptimisticRetry(retry.NTimes(0, 0)),
			counter.WithPromotedToLock("/counters/promo-lock", 20*time.Second, retry.NTimes(100, time.Millisecond)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				r, err := l.Increment(ctxT(t, 30*time.Second))
				if assert.NoError(t, err) && assert.True(t, r.Succeeded) {
					mu.Lock()
					succeeded++
					if r.Stats.PromotedTries > 0 {
						promoted++
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, clients*each, succeeded)
	assert.Positive(t, promoted, "no increment was promoted")
	assert.Equal(t, int64(succeeded), rawLong(t, obs, "/counters/promo"))
	testkit.WaitChildren(t, obs, "/counters/promo-lock", 0)
}

// The promoted lock held elsewhere past the timeout: as Curator, not
// succeeded and no error, and nothing written.
func TestPromotedLockTimeoutIsNotSucceeded(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	other := newClient(t, cl.Addrs())
	otherL := newLong(t, other, "/counters/busy")
	require.NoError(t, otherL.Set(ctxT(t, 10*time.Second), 1))
	h := holdMutex(t, other, "/counters/busy-lock")
	defer h.Release()

	l := newLong(t, c, "/counters/busy",
		counter.WithOptimisticRetry(retry.NTimes(0, 0)),
		counter.WithPromotedToLock("/counters/busy-lock", 300*time.Millisecond, retry.NTimes(3, 0)))
	var r counter.Result[int64]
	var err error
	betweenReadAndWrite(t, p, func() { r, err = l.Increment(ctxT(t, 10*time.Second)) }, func() {
		require.NoError(t, otherL.Set(ctxT(t, 10*time.Second), 100)) // the optimistic try loses
	})
	require.NoError(t, err)
	assert.False(t, r.Succeeded)
	assert.Equal(t, 1, r.Stats.OptimisticTries)
	assert.Zero(t, r.Stats.PromotedTries, "the lock was never granted")
	assert.GreaterOrEqual(t, r.Stats.PromotedTime, 300*time.Millisecond)
	assert.Equal(t, int64(100), rawLong(t, c, "/counters/busy"), "nothing written")
}

// Close ends an operation waiting for the promoted lock with
// zkrecipes.ErrClosed, at once rather than after the lock's timeout.
func TestCloseEndsAnOperationWaitingForThePromotedLock(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	other := newClient(t, cl.Addrs())
	rival := newLong(t, other, "/counters/close-wait")
	h := holdMutex(t, other, "/counters/close-wait-lock")
	defer h.Release()
	l := newLong(t, c, "/counters/close-wait",
		counter.WithOptimisticRetry(retry.NTimes(0, 0)),
		counter.WithPromotedToLock("/counters/close-wait-lock", time.Minute, retry.NTimes(3, 0)))
	p.StallRequestsFrom(zktest.OpMulti)
	t.Cleanup(p.Release)
	var err error
	done := start(func() { _, err = l.Increment(ctxT(t, 2*time.Minute)) })
	waitHeld(t, p, done)
	_, rerr := rival.Increment(ctxT(t, 10*time.Second)) // the optimistic try loses
	require.NoError(t, rerr)
	p.Release()
	// The increment queues for the lock: its node appears.
	testkit.WaitChildren(t, other, "/counters/close-wait-lock", 2)
	begun := time.Now()
	require.NoError(t, l.Close())
	select {
	case <-done:
		assert.ErrorIs(t, err, zkrecipes.ErrClosed)
		assert.ErrorContains(t, err, "long counter /counters/close-wait: ")
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not end the wait for the promoted lock")
	}
	assert.Less(t, time.Since(begun), 20*time.Second)
	testkit.WaitChildren(t, other, "/counters/close-wait-lock", 1)
	assert.Equal(t, int64(1), rawLong(t, other, "/counters/close-wait"), "the closed increment wrote nothing")
}

// Close ends an operation sleeping between its optimistic tries with
// zkrecipes.ErrClosed.
func TestCloseEndsAnOperationBetweenItsTries(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	rival := newLong(t, newClient(t, cl.Addrs()), "/counters/close-retry")
	// The policy is asked once the first try has lost: the operation
	// sleeps from then on.
	lost := make(chan struct{})
	var once sync.Once
	l := newLong(t, c, "/counters/close-retry", counter.WithOptimisticRetry(retry.Custom(
		func(int, time.Duration) (time.Duration, bool) {
			once.Do(func() { close(lost) })
			return time.Hour, true
		})))
	p.StallRequestsFrom(zktest.OpMulti)
	t.Cleanup(p.Release)
	var err error
	done := start(func() { _, err = l.Increment(ctxT(t, 2*time.Minute)) })
	waitHeld(t, p, done)
	_, rerr := rival.Increment(ctxT(t, 10*time.Second))
	require.NoError(t, rerr)
	p.Release()
	testkit.WaitClosed(t, lost, 30*time.Second, "the first try did not lose")
	require.NoError(t, l.Close())
	select {
	case <-done:
		assert.ErrorIs(t, err, zkrecipes.ErrClosed)
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not end the operation")
	}
	assert.Equal(t, int64(1), rawLong(t, c, "/counters/close-retry"))
}
