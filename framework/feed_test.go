package framework_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	assert.Equal(t, 10, n, "an unbounded subscription misses nothing")
}

func abs(n int) int { return max(n, -n) }

func fmtInts(v []int) string { return fmt.Sprint(v) }
