package framework

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// The router's side of FailedReadIntoLeavesTheRereadsWatchRouted:
// a read whose route an event took, failing after a re-read added its own,
// must not take the re-read's.
func TestRouterFailedReadKeepsTheRereadsRoute(t *testing.T) {
	rt := newRouter("")
	w := NewWatches()
	const p = "/n"
	_, fresh, _ := rt.add(p, w, WatchData) // B, on its way
	assert.True(t, fresh)
	rt.onEvent(zk.Event{Type: zk.EventNodeDataChanged, Path: p}) // an older watch fires
	assert.Len(t, w.Take(), 1)
	_, fresh, _ = rt.add(p, w, WatchData) // C, the reader's read again
	assert.True(t, fresh)
	rt.remove(p, w, WatchData, 0) // B fails (added at generation 0)
	rt.answered(p, w, WatchData)  // C is answered: its watch is set on the server
	rt.onEvent(zk.Event{Type: zk.EventNodeDataChanged, Path: p})
	assert.Len(t, w.Take(), 1, "C's watch fired: its event is routed into w")
}
