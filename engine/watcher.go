package engine

import (
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Watcher follows many granted Nodes of one client with a few goroutines in
// all, where a Node on its own follows its loss signal and its node with a
// goroutine or two of its own: a process that holds a thousand locks at
// once (a partitioner's items) would otherwise keep a thousand goroutines
// waiting. Give it to Follow with WithWatcher.
//
// A Node followed by a Watcher learns exactly what one on its own does,
// and as soon: the session's loss signal (one goroutine per session's
// signal, waiting on nothing else and making no network call, ends every
// Node of that session when it fires), and its node deleted or owned by
// another session (each node's data watch is delivered to one
// framework.Watches queue that one goroutine reads; a change is read again
// by a few short-lived tasks on the client's workers). The one difference
// is a request: such a Node reads its node at once, where one on its own
// waits for its directory to change (Grant.Changed) before it does.
//
// A Watcher needs no Close: its goroutines run only while it follows a
// Node, and a Node stops being followed when it is released, forgotten or
// ended by its lease or its client's Close. It is safe for concurrent use.
type Watcher struct {
	client  *framework.Client
	watches *framework.Watches

	mu       sync.Mutex
	nodes    map[string][]*watched          // followed, by path (one, but for a Node followed twice)
	groups   map[<-chan struct{}]*lossGroup // by loss signal
	draining bool                           // the queue's reader runs
	idle     chan struct{}                  // capacity 1: the last Node left
	pending  []*watched                     // to be read again, oldest first
	readers  int                            // tasks reading pending
}

// watched is one Node a Watcher follows.
type watched struct {
	n       *Node
	queued  bool // in pending
	signal  <-chan struct{}
	group   *lossGroup // the group it joined, under w.mu
	removed bool
}

// lossGroup is the Nodes of one loss signal, and what ends its goroutine
// once it has none left.
type lossGroup struct {
	nodes map[*watched]struct{}
	empty chan struct{}
}

// maxReaders bounds the tasks reading nodes again: a thousand grants at
// once are read a few at a time, pipelined on the one session.
const maxReaders = 8

// NewWatcher returns a Watcher for the Nodes of client. It starts nothing.
func NewWatcher(client *framework.Client) *Watcher {
	return &Watcher{client: client, watches: framework.NewWatches(), nodes: map[string][]*watched{},
		groups: map[<-chan struct{}]*lossGroup{}, idle: make(chan struct{}, 1)}
}

// Client is the client whose Nodes w follows (NewWatcher's).
func (w *Watcher) Client() *framework.Client {
	if w == nil {
		return nil
	}
	return w.client
}

// WithWatcher has Follow follow the Node through w instead of goroutines
// of its own (see Watcher). A nil w, or a Watcher of another client, is
// ignored: the Node follows itself, with every guarantee.
func WithWatcher(w *Watcher) Option {
	return nodeOption(func(c *nodeConfig) { c.watcher = w })
}

// add follows e's Node, and reads its node; w.remove(e) stops it (n's
// stop), even before add.
func (w *Watcher) add(e *watched) {
	n, signal := e.n, e.signal
	w.mu.Lock()
	if e.removed {
		w.mu.Unlock()
		return
	}
	w.nodes[n.path] = append(w.nodes[n.path], e)
	g := w.groups[signal]
	startGroup := g == nil
	if startGroup {
		g = &lossGroup{nodes: map[*watched]struct{}{}, empty: make(chan struct{})}
		w.groups[signal] = g
	}
	g.nodes[e] = struct{}{}
	e.group = g
	startDrain := !w.draining
	w.draining = true
	w.mu.Unlock()
	if startGroup && !w.client.Go(func() { w.followSignal(signal, g) }) {
		w.dropGroup(signal, g) // closing: the client's Close ended n
	}
	if startDrain && !w.client.Go(w.drain) {
		w.mu.Lock()
		w.draining = false
		w.mu.Unlock()
	}
	w.read(e)
}

// remove stops following e's Node: released, forgotten or ended.
func (w *Watcher) remove(e *watched) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.removed {
		return
	}
	e.removed = true
	if rest := slices.DeleteFunc(w.nodes[e.n.path], func(o *watched) bool { return o == e }); len(rest) > 0 {
		w.nodes[e.n.path] = rest
	} else {
		delete(w.nodes, e.n.path)
	}
	// Its group may have fired (and left the map) already: the last of
	// its Nodes to go closes empty all the same, once.
	if g := e.group; g != nil {
		delete(g.nodes, e)
		if len(g.nodes) == 0 {
			if w.groups[e.signal] == g {
				delete(w.groups, e.signal)
			}
			close(g.empty)
		}
	}
	if len(w.nodes) == 0 {
		select {
		case w.idle <- struct{}{}:
		default:
		}
	}
}

// dropGroup forgets g, whose goroutine never ran.
func (w *Watcher) dropGroup(signal <-chan struct{}, g *lossGroup) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.groups[signal] == g {
		delete(w.groups, signal)
	}
}

// followSignal turns one loss signal into the end of every Node under it,
// as Node.watchSignal does for one. It never does network calls, so
// nothing can delay the signal; it ends with the last of its Nodes.
func (w *Watcher) followSignal(signal <-chan struct{}, g *lossGroup) {
	select {
	case <-signal:
	case <-g.empty:
		return
	case <-w.client.Done(): // its OnClose ended every Node already
		return
	}
	w.mu.Lock()
	if w.groups[signal] == g {
		delete(w.groups, signal) // a Node followed from now on has a group of its own
	}
	ended := make([]*Node, 0, len(g.nodes))
	for e := range g.nodes {
		ended = append(ended, e.n)
	}
	w.mu.Unlock()
	for _, n := range ended {
		n.finish(n.lossCause())
	}
}

// drain reads the queue of the Nodes' watches until no Node is followed.
func (w *Watcher) drain() {
	for {
		select {
		case <-w.watches.Ready():
			for _, f := range w.watches.Take() {
				w.fired(f)
			}
		case <-w.idle:
		case <-w.client.Done():
		}
		w.mu.Lock()
		if len(w.nodes) == 0 || w.client.Closed() {
			w.draining = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// fired is a watch's event on a Node's path: deleted ends the Node, as
// Node.watchNode does; anything else (its data changed, or the watch
// ended with the link) calls for a read again. An event on a path no
// longer followed (a released node's own delete) is ignored.
func (w *Watcher) fired(f framework.Fired) {
	w.mu.Lock()
	followed := slices.Clone(w.nodes[f.Path])
	w.mu.Unlock()
	for _, e := range followed {
		if f.Type == zk.EventNodeDeleted && !w.client.Closed() {
			e.n.finish(zkrecipes.ErrNodeDeleted)
		} else {
			w.read(e)
		}
	}
}

// read queues e's Node to be read (and watched) again, and starts a task
// to read it if fewer than maxReaders run.
func (w *Watcher) read(e *watched) {
	w.mu.Lock()
	if e.queued || e.removed || w.client.Closed() {
		w.mu.Unlock()
		return
	}
	e.queued = true
	w.pending = append(w.pending, e)
	start := w.readers < maxReaders
	if start {
		w.readers++
	}
	w.mu.Unlock()
	if start && !w.client.Go(w.readPending) {
		// Closing: the client's Close ended every Node.
		w.mu.Lock()
		w.readers--
		w.mu.Unlock()
	}
}

// readPending reads the queued Nodes until none is left.
func (w *Watcher) readPending() {
	for {
		w.mu.Lock()
		if len(w.pending) == 0 {
			w.pending = nil
			w.readers--
			w.mu.Unlock()
			return
		}
		e := w.pending[0]
		w.pending[0] = nil
		w.pending = w.pending[1:]
		e.queued = false // an event from now on reads it again
		w.mu.Unlock()
		if w.look(e.n) {
			w.read(e)
		}
	}
}

// look reads n's node with a watch into the queue, as one turn of
// Node.watchNode: gone, or not the node granted, ends n; a revocation
// request closes Revoked. It reports whether to read again: the link went
// down under the same session, and is back.
func (w *Watcher) look(n *Node) (again bool) {
	ctx := n.life
	if ctx.Err() != nil {
		return false
	}
	data, st, _, err := n.client.GetW(ctx, n.path, framework.Into(w.watches))
	return n.judge(ctx, data, st, err) == lookAgain
}
