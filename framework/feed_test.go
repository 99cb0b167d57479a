package framework_test

import (
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
