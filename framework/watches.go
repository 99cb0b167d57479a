package framework

import (
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"
)

// WatchKind says which watched read set a watch whose event a Watches
// queue delivers.
type WatchKind uint8

// The kinds of watch, one per watched read.
const (
	// WatchData is GetW's: the node's data changed, or it was deleted.
	WatchData WatchKind = iota + 1
	// WatchExists is ExistsW's: the node was created, changed or deleted.
	WatchExists
	// WatchChildren is ChildrenW's: a child was added or removed, or the
	// node was deleted.
	WatchChildren
)

// Fired is one watch's event as a Watches queue delivers it: the event,
// its Path as the caller names it (without the client's namespace), and
// the kind of read that set the watch.
type Fired struct {
	zk.Event
	Kind WatchKind
}

// Watches is a queue of watch events that its owner reads, for a recipe
// that watches many nodes: each watched read given Into(w) delivers its
// one event here instead of on a channel of its own, so that a thousand
// watches cost a thousand small registrations and no goroutine (the
// client routes the connection's events to them). Pushing never blocks the
// client: the queue grows until its owner takes what it holds.
//
// A watch delivers exactly one event, as the channel form does (see
// GetW), with one difference: a watch set while the node was changing may
// also be told of the change its read already saw (the event and the read's
// reply cross on the wire), so a reader treats an event as "read it
// again", never as a change in itself. Events of one path arrive in the
// order the server sent them.
type Watches struct {
	mu    sync.Mutex
	queue []Fired
	ready chan struct{} // capacity 1: "queue is not empty"
}

// NewWatches returns an empty queue.
func NewWatches() *Watches {
	return &Watches{ready: make(chan struct{}, 1)}
}

// Ready receives a value when events are queued: take them with Take.
// One value may stand for many events, and one may remain after Take
// emptied the queue (Take then returns nothing).
func (w *Watches) Ready() <-chan struct{} { return w.ready }

// Take returns the events queued, oldest first, and empties the queue.
func (w *Watches) Take() []Fired {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.queue
	w.queue = nil
	return out
}

func (w *Watches) push(f Fired) {
	w.mu.Lock()
	w.queue = append(w.queue, f)
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// WatchOption changes how a watched read (GetW, ExistsW, ChildrenW) hands
// its watch over.
type WatchOption interface{ applyWatch(*watchOptions) }

type watchOptions struct {
	into    *Watches
	intoSet bool // Into was given, even with nil
}

type watchOptionFunc func(*watchOptions)

func (f watchOptionFunc) applyWatch(o *watchOptions) { f(o) }

// Into delivers the read's watch to w instead of a channel of its own: the
// read then returns a nil channel. A nil w is refused with
// zkrecipes.ErrInvalidArgument before anything is sent.
//
// A read Into w of a node that a watch of the same kind, set by an earlier
// read Into w that was answered, still waits for sets no second one: that
// watch tells of the next change, and one registration per node and kind
// is what a recipe watching thousands of nodes can afford (go-zookeeper
// keeps each, and would deliver the event once per registration). A
// reader that reads one node again after a gap on the same session thus
// costs nothing more. While two reads that set watches on one node are on
// their way at once, neither counts as set (the client cannot tell which
// answer is which watch's): a read then sets one of its own.
func Into(w *Watches) WatchOption {
	return watchOptionFunc(func(o *watchOptions) { o.into, o.intoSet = w, true })
}

// routes are the watches of one path delivered into Watches queues: the
// kinds routed into one queue as bits (a cache's data and child watches
// of a node), and any other in more. Kept small: a cache has one per
// node it watches.
type routes struct {
	into  *Watches
	kinds uint8 // bit 1<<kind for each kind routed into into
	// set: of kinds, those whose read was answered, the only one setting
	// a watch on the path then: the watch is set, and no other read sets
	// one of its kind into into.
	set     uint8
	reading uint16 // reads setting a watch on the path, not answered yet
	// fired counts the events that took routes of the path: a read whose
	// route an event took since its add has none left to remove.
	fired uint16
	more  *[]extraRoute
}

// extraRoute is a watch of a path routed into a second queue, or a second
// one of the same kind into the first.
type extraRoute struct {
	into *Watches
	kind WatchKind
	set  bool
}

func bit(k WatchKind) uint8 { return 1 << k }

// router takes every watch event go-zookeeper passes to the session's
// callback and delivers it to the Watches queues of the reads that set
// the watch. It runs on go-zookeeper's receive loop, so it only looks up a
// map and queues: it never blocks.
//
// A route is added before its read is sent, and removed if the read
// fails: an event that reaches the client after the read's reply (the
// watch's own) always finds it, and one that crossed the reply on the
// wire may find it too (see Watches).
type router struct {
	ns     namespace
	mu     sync.Mutex
	routes map[string]routes // by the path with the namespace
	closed bool
}

func newRouter(ns namespace) *router { return &router{ns: ns, routes: map[string]routes{}} }

// add routes the watch of kind k on full, the path with the namespace,
// into w; it returns false once the client closed, and fresh false if a
// watch of kind k on full, set by a read already answered, is routed into
// w and has not fired: that one tells of the next change, and the read
// sets none (go-zookeeper would keep a second registration, and deliver
// the event twice). gen is what remove is given if the read fails.
func (rt *router) add(full string, w *Watches, k WatchKind) (ok, fresh bool, gen uint16) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return false, false, 0
	}
	rs := rt.routes[full]
	switch {
	case rs.into == w && rs.set&bit(k) != 0:
		return true, false, 0
	case rs.more != nil && slices.Contains(*rs.more, extraRoute{w, k, true}):
		return true, false, 0
	case rs.kinds == 0:
		rs.into, rs.kinds, rs.set = w, bit(k), 0
	case rs.into == w && rs.kinds&bit(k) == 0:
		rs.kinds |= bit(k)
	default:
		if rs.more == nil {
			rs.more = new([]extraRoute)
		}
		*rs.more = append(*rs.more, extraRoute{w, k, false})
	}
	rs.reading++
	rt.routes[full] = rs
	return true, true, rs.fired
}

// answered marks the watch of kind k on full into w, which add routed,
// as set: its read was answered. It marks nothing if another read setting
// a watch on full is on its way (its route and this one cannot be told
// apart), or if the watch fired meanwhile.
func (rt *router) answered(full string, w *Watches, k WatchKind) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rs, ok := rt.routes[full]
	if !ok {
		return
	}
	alone := rs.reading == 1
	rs.reading--
	switch {
	case !alone:
	case rs.into == w && rs.kinds&bit(k) != 0 && rs.set&bit(k) == 0:
		rs.set |= bit(k)
	case rs.more != nil:
		if i := slices.Index(*rs.more, extraRoute{w, k, false}); i >= 0 {
			(*rs.more)[i].set = true
		}
	}
	rt.store(full, rs)
}

// remove unroutes a watch of kind k on full into w, whose read failed;
// gen is add's.
func (rt *router) remove(full string, w *Watches, k WatchKind, gen uint16) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rs, ok := rt.routes[full]
	if !ok {
		return
	}
	rs.reading--
	switch {
	case rs.fired != gen:
		// An event took routes of the path since this read's add, its own
		// among them if of the event's kind: a route of kind k into w left
		// now may be a later read's, whose watch is set or on its way, and
		// taking it would leave that watch's event to nobody. One left of
		// this read's costs at worst a spurious "read it again".
	case rs.into == w && rs.kinds&bit(k) != 0 && rs.set&bit(k) == 0:
		rs.kinds &^= bit(k)
	case rs.more != nil:
		if i := slices.Index(*rs.more, extraRoute{w, k, false}); i >= 0 {
			*rs.more = slices.Delete(*rs.more, i, i+1)
		}
	}
	rt.store(full, rs)
}

// store keeps rs as full's routes, or forgets full if none is left and
// no read setting a watch on it is on its way.
func (rt *router) store(full string, rs routes) {
	if rs.more != nil && len(*rs.more) == 0 {
		rs.more = nil
	}
	if rs.kinds == 0 && rs.more != nil {
		// The first queue has nothing left: another takes its place.
		first := (*rs.more)[0]
		*rs.more = (*rs.more)[1:]
		rs.into, rs.kinds, rs.set = first.into, bit(first.kind), 0
		if first.set {
			rs.set = bit(first.kind)
		}
		rt.store(full, rs)
		return
	}
	if rs.kinds == 0 && rs.reading == 0 {
		delete(rt.routes, full)
		return
	}
	rt.routes[full] = rs
}

// fires says whether an event of type t fires a watch of kind k, as
// go-zookeeper decides for its own channels (Conn.notifyWatches); a
// watch that can no longer fire is told whatever its kind.
func fires(t zk.EventType, k WatchKind) bool {
	switch t {
	case zk.EventNodeCreated:
		return k == WatchExists
	case zk.EventNodeDataChanged:
		return k == WatchExists || k == WatchData
	case zk.EventNodeChildrenChanged:
		return k == WatchChildren
	case zk.EventNodeDeleted, zk.EventNotWatching:
		return true
	}
	return false
}

// onEvent is the session's callback for watch events.
func (rt *router) onEvent(ev zk.Event) {
	if ev.Type == zk.EventSession || ev.Path == "" {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rs, ok := rt.routes[ev.Path]
	if !ok {
		return
	}
	full := ev.Path
	ev.Path = rt.ns.unfix(full)
	rs.fired++
	for k := WatchData; k <= WatchChildren; k++ {
		if rs.kinds&bit(k) != 0 && fires(ev.Type, k) {
			rs.kinds &^= bit(k)
			rs.set &^= bit(k)
			rs.into.push(Fired{Event: ev, Kind: k})
		}
	}
	if rs.more != nil {
		keep := (*rs.more)[:0]
		for _, r := range *rs.more {
			if fires(ev.Type, r.kind) {
				r.into.push(Fired{Event: ev, Kind: r.kind})
			} else {
				keep = append(keep, r)
			}
		}
		*rs.more = keep
	}
	rt.store(full, rs)
}

// close tells every watch routed and not fired that it can no longer fire
// (EventNotWatching, zk.ErrClosing), and refuses new ones: Close calls it
// once the session has ended.
func (rt *router) close() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.closed = true
	for full, rs := range rt.routes {
		ev := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: rt.ns.unfix(full), Err: zk.ErrClosing}
		for k := WatchData; k <= WatchChildren; k++ {
			if rs.kinds&bit(k) != 0 {
				rs.into.push(Fired{Event: ev, Kind: k})
			}
		}
		if rs.more != nil {
			for _, r := range *rs.more {
				r.into.push(Fired{Event: ev, Kind: r.kind})
			}
		}
	}
	rt.routes = map[string]routes{}
}
