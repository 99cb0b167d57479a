package engine

import (
	"sync"

	"github.com/zkrecipes/zkrecipes/framework"
)

// heads is each client's headSet, made at the client's first grant and
// dropped at its Close.
var heads sync.Map // *framework.Client → *headSet

// headsOf returns c's headSet.
func headsOf(c *framework.Client) *headSet {
	if h, ok := heads.Load(c); ok {
		return h.(*headSet)
	}
	h, loaded := heads.LoadOrStore(c, &headSet{})
	if !loaded {
		c.OnClose(func() { heads.Delete(c) })
	}
	return h.(*headSet)
}

// headSet remembers the last queue nodes a client granted with nothing ahead
// of them, by path and czxid: a waiter of the same client that watched
// such a node knows, when it goes, that nothing is ahead of it either
// (sequence numbers only grow, so nothing can queue ahead later), and need
// not list the queue again. A node forgotten only costs that listing, so
// the memory is a small ring. The zero value is ready to use.
type headSet struct {
	mu   sync.Mutex
	set  map[headKey]struct{}
	ring [headsKept]headKey
	next int
}

// headsKept bounds the memory: a successor looks its predecessor up within
// a round trip of the grant, and a client rarely grants this many holds in
// one.
const headsKept = 1024

type headKey struct {
	path  string
	czxid int64
}

// note remembers that the node at path, created at czxid, was granted with
// nothing ahead of it.
func (h *headSet) note(path string, czxid int64) {
	k := headKey{path, czxid}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.set == nil {
		h.set = make(map[headKey]struct{}, headsKept)
	}
	delete(h.set, h.ring[h.next])
	h.ring[h.next] = k
	h.next = (h.next + 1) % headsKept
	h.set[k] = struct{}{}
}

// was reports whether the node at path created at czxid was noted, and
// forgets it: a node has one successor.
func (h *headSet) was(path string, czxid int64) bool {
	k := headKey{path, czxid}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.set[k]
	delete(h.set, k)
	return ok
}
