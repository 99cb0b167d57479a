package framework_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// next takes the next value of s, failing t if none comes.
func next[T any](t *testing.T, s *framework.Subscription[T]) (T, bool) {
	t.Helper()
	select {
	case v, ok := <-s.Changes():
		return v, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no value")
		var zero T
		return zero, false
	}
}

// A subscription made with SubscribeWith begins with its own first value,
// then receives what is published, as the others do; they never receive
// its first value.
func TestFeedSubscribeWithBeginsWithItsOwnFirstValue(t *testing.T) {
	var f framework.Feed[int]
	early := f.Subscribe()
	defer early.Close()
	f.Publish(1)
	late := f.SubscribeWith(1)
	defer late.Close()
	f.Publish(2)
	f.End(nil)
	for _, s := range []*framework.Subscription[int]{early, late} {
		v, ok := next(t, s)
		require.True(t, ok)
		assert.Equal(t, 1, v)
		v, ok = next(t, s)
		require.True(t, ok)
		assert.Equal(t, 2, v)
		_, ok = next(t, s)
		assert.False(t, ok, "the feed ended")
	}
	ended := f.SubscribeWith(3)
	_, ok := next(t, ended)
	assert.False(t, ok, "a subscription to an ended feed is ended, without its first value")
}

// A bounded subscription whose reader falls behind gets, in place of what
// it missed, the catch-up value its subscriber made at the moment of the
// overflow, then what is published after it; the other subscriptions get
// everything.
func TestFeedSubscribeBoundedReplacesABacklogWithItsCatchUp(t *testing.T) {
	var f framework.Feed[int]
	state := 0 // the publisher's state; published under its own "lock"
	all := f.Subscribe()
	defer all.Close()
	bounded := f.SubscribeBounded(0, 3, func() int { return -state })
	defer bounded.Close()
	v, ok := next(t, bounded)
	require.True(t, ok)
	assert.Equal(t, 0, v, "the first value")
	for state = 1; state <= 10; state++ {
		f.Publish(state)
	}
	f.End(nil)
	var got []int
	for v := range bounded.Changes() {
		got = append(got, v)
	}
	// Nobody read while 10 values came: the queue overflowed, at the
	// latest with 10 (the forwarding goroutine may hold one value taken
	// out of the queue before, which it still delivers, first).
	require.NotEmpty(t, got)
	for i := 1; i < len(got); i++ {
		assert.Less(t, abs(got[i-1]), abs(got[i]), "in order: %v", got)
	}
	assert.Equal(t, 10, abs(got[len(got)-1]), "the last value, or a catch-up that stands for it")
	assert.Contains(t, fmtInts(got), "-", "10 values overflowed a queue of 3: %v", got)
	assert.LessOrEqual(t, len(got), 5, "never more than the limit queued, plus the one being handed over")
	n := 0
	for range all.Changes() {
		n++
	}
	assert.Equal(t, 10, n, "a subscription within its bound misses nothing")
	assert.NoError(t, all.Err())
	assert.NoError(t, bounded.Err(), "a catch-up subscription never ends for being behind")
}

func abs(n int) int { return max(n, -n) }

func fmtInts(v []int) string { return fmt.Sprint(v) }

// A reader that never reads is ended once it is more than its bound
// behind: its channel closes after at most the one value being handed
// over, its Err wraps ErrFellBehind, and the feed holds nothing more for
// it however much is published; a reader within its bound on the same
// feed misses nothing.
func TestFeedEndsASubscriptionThatFallsBehindItsBound(t *testing.T) {
	var f framework.Feed[int]
	stalled := f.SubscribeWithBound(4, 0)
	defer stalled.Close()
	reader := f.SubscribeWith(0)
	defer reader.Close()
	_, ok := next(t, reader)
	require.True(t, ok)
	for i := 1; i <= 100; i++ {
		f.Publish(i)
		v, ok := next(t, reader) // keeps up: never more than one behind
		require.True(t, ok)
		require.Equal(t, i, v, "the reader gets every value, in order")
	}
	var late []int
	for v := range stalled.Changes() {
		late = append(late, v)
	}
	assert.LessOrEqual(t, len(late), 1, "nothing after the value being handed over: %v", late)
	require.ErrorIs(t, stalled.Err(), zkrecipes.ErrFellBehind)
	f.Publish(101) // nothing more for it, and no panic
	v, ok := next(t, reader)
	require.True(t, ok)
	assert.Equal(t, 101, v)
	f.End(nil)
	_, ok = next(t, reader)
	assert.False(t, ok)
	assert.NoError(t, reader.Err())
	require.ErrorIs(t, stalled.Err(), zkrecipes.ErrFellBehind, "End does not hide why it ended")
}

// The default bound holds memory: a subscriber that never reads, on a
// feed that publishes a hundred times its bound of 1 KiB values, costs
// about its bound, not everything published, and is told it fell behind.
func TestFeedDefaultBoundStopsMemoryGrowing(t *testing.T) {
	var f framework.Feed[[]byte]
	stalled := f.Subscribe()
	defer stalled.Close()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	const n = 100 * framework.DefaultBound // 100 MiB if all were kept
	for i := 0; i < n; i++ {
		f.Publish(make([]byte, 1024))
	}
	after := heap()
	grown := int64(after) - int64(before)
	assert.Less(t, grown, int64(16<<20), "the feed kept %d bytes for a reader that never reads", grown)
	for range stalled.Changes() {
	}
	require.ErrorIs(t, stalled.Err(), zkrecipes.ErrFellBehind)
}

// The bound counts the changes, not the values a subscription begins
// with: a state of many values (a group's members) does not end it.
func TestFeedBoundCountsChangesNotTheFirstValues(t *testing.T) {
	var f framework.Feed[int]
	first := make([]int, 3*framework.DefaultBound)
	s := f.SubscribeWith(first...)
	defer s.Close()
	for i := 0; i < framework.DefaultBound-1; i++ {
		f.Publish(i)
	}
	f.End(nil)
	n := 0
	for range s.Changes() {
		n++
	}
	assert.Equal(t, len(first)+framework.DefaultBound-1, n)
	assert.NoError(t, s.Err())
}
