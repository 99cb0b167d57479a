package framework

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// A read's answer marks its watch set only if it was the one read setting
// a watch on the path: a first read whose watch fired before its answer
// was taken, and a second read of the same node then on its way, cannot
// be told apart. Were the first answer to mark the second's route set, a
// third read would set no watch, and the second, failing, would leave
// the node watched by nothing.
func TestRouterAnswerMarksSetOnlyTheOneReadOnItsWay(t *testing.T) {
	rt := newRouter("")
	w := NewWatches()
	const p = "/n"
	ok, fresh, _ := rt.add(p, w, WatchData) // the first read
	assert.True(t, ok && fresh)
	rt.onEvent(zk.Event{Type: zk.EventNodeDataChanged, Path: p}) // its watch fires before its answer is taken
	_, fresh, second := rt.add(p, w, WatchData)                  // the second read, on its way
	assert.True(t, fresh)
	rt.answered(p, w, WatchData) // the first's answer
	_, fresh, _ = rt.add(p, w, WatchData)
	assert.True(t, fresh, "a third read sets a watch: the second's is not known to be set")
	rt.remove(p, w, WatchData, second) // the second fails
	rt.answered(p, w, WatchData)
	_, fresh, _ = rt.add(p, w, WatchData)
	assert.False(t, fresh, "the third's watch, answered alone, is set")
	w.Take()
	rt.onEvent(zk.Event{Type: zk.EventNodeDataChanged, Path: p})
	assert.Len(t, w.Take(), 1, "one event for the one watch")
	assert.Empty(t, rt.routes, "nothing left routed")
}
