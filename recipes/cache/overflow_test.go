package cache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// A reader that does not read while more events come than its buffer
// holds never holds the cache up: it gets an Overflow in place of what it
// missed, which carries the whole view, and the events after it apply to
// that view and give the cache's.
func TestSlowReaderGetsOverflowWithTheViewThenTheRest(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	create(t, c, "/slow/seed", "")
	ch := newCache(t, c, "/slow", cache.Children(), cache.WithBufferSize(4))
	fast := newMirror(t, ch) // reads all along
	sub := ch.Subscribe()
	defer sub.Close()
	first := <-sub.Changes()
	require.Equal(t, cache.Snapshot, first.Type)

	for i := range 30 {
		create(t, c, fmt.Sprintf("/slow/n%02d", i), "")
	}
	waitAgrees(t, ch, fast, c, "children", 1) // the cache went on meanwhile
	n := fast.len()
	set(t, c, "/slow/seed", "after")
	waitTypes(t, fast, n, "changed /slow/seed")

	view := map[string]cache.Node{}
	for _, n := range first.Nodes {
		view[n.Path] = n
	}
	overflows, events := 0, 0
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case ev := <-sub.Changes():
			events++
			switch ev.Type {
			case cache.Overflow:
				overflows++
				view = map[string]cache.Node{}
				for _, n := range ev.Nodes {
					view[n.Path] = n
				}
			case cache.Created, cache.Changed:
				view[ev.Node.Path] = ev.Node
			case cache.Deleted:
				delete(view, ev.Node.Path)
			}
			done = ev.Type == cache.Changed && ev.Node.Path == "/slow/seed"
		case <-deadline:
			t.Fatalf("the change after the overflow did not come; %d events", events)
		}
	}
	assert.GreaterOrEqual(t, overflows, 1)
	assert.LessOrEqual(t, events, 4+2+1, "no more than the buffer, the one being handed over, the overflow")
	assert.Equal(t, fast.rendered(), rendered(view))
}
