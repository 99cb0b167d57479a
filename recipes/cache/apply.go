package cache

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
)

// keyed is an event and the zxid that orders it among a round's.
type keyed struct {
	ev  Event
	key int64
}

// apply takes a round's results into the view: first the nodes' data (new
// nodes, changes, nodes made again), parents first, then the listings
// (children gone, children to read). The events it makes are sorted by the
// zxid of the change each reports and then published, each as its change
// is made to the published view.
func (c *Cache) apply(results []result) {
	slices.SortStableFunc(results, func(a, b result) int {
		if a.kind != b.kind {
			return cmp.Compare(a.kind, b.kind)
		}
		return cmp.Compare(strings.Count(a.path, "/"), strings.Count(b.path, "/"))
	})
	// A round that ends as the cache closes applies what it read, as if it
	// had ended just before: Close ends the feed only after the engine.
	c.mu.Lock()
	defer c.mu.Unlock()
	// The nodes listed in this round, by the Czxid of the incarnation the
	// listing found: a new node needs no other listing only if this one is
	// of the same incarnation as its data read. A listing that found
	// nothing, or an older Czxid, was taken before the node was made again.
	listed := map[string]int64{}
	for _, r := range results {
		if r.kind == kindKids && r.err == nil && !r.again && !r.missing {
			listed[r.path] = r.stat.Czxid
		}
	}
	var evs []keyed
	for _, r := range results {
		if r.err != nil || r.again {
			continue
		}
		switch r.kind {
		case kindData:
			czxid, ok := listed[r.path]
			evs = c.applyData(evs, r, ok && !r.missing && czxid == r.stat.Czxid)
		case kindKids:
			evs = c.applyKids(evs, r)
		}
	}
	slices.SortStableFunc(evs, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	c.publish(evs)
}

// publish publishes a round's events in order. The engine's entries, which
// are the view, already hold what the last of them says: while they are
// published, pending holds what the view has of each node they change as
// of the events published so far (the state before the first event of
// each), for a catch-up made meanwhile.
func (c *Cache) publish(evs []keyed) {
	if len(evs) == 0 {
		return
	}
	c.pending = make(map[string]*Node, len(evs))
	for i := range evs {
		ev := &evs[i].ev
		if _, ok := c.pending[ev.Node.Path]; ok {
			continue
		}
		switch ev.Type {
		case Created:
			c.pending[ev.Node.Path] = nil
		case Changed:
			c.pending[ev.Node.Path] = &ev.Old
		case Deleted:
			c.pending[ev.Node.Path] = &ev.Node
		}
	}
	for i := range evs {
		ev := &evs[i].ev
		if ev.Type == Deleted {
			c.pending[ev.Node.Path] = nil
		} else {
			c.pending[ev.Node.Path] = &ev.Node
		}
		c.feed.Publish(*ev)
	}
	c.pending = nil
}

// applyData takes one data read: the node is new, changed, made again, or
// gone (the root; another node's absence is its parent's listing's to
// tell). listed says this round listed the incarnation the read found.
func (c *Cache) applyData(evs []keyed, r result, listed bool) []keyed {
	e, known := c.ents[r.path]
	if r.missing {
		if r.path == c.path && known {
			evs = c.removeTree(evs, r.path, math.MaxInt64)
		} else if r.path != c.path {
			c.in.mark(kindKids, framework.Parent(r.path))
			if known {
				// The listing may find it made again since, by a name it
				// knows: only a read of it tells the new node, and no
				// watch of the old one is left to ask for that read.
				c.in.mark(kindData, r.path)
			}
		}
		return evs
	}
	path, stat := r.path, *r.stat
	if known && !c.hidden(e) {
		old := e.Node
		switch {
		case stat.Czxid == old.Stat.Czxid:
			if stat.Mzxid <= old.Stat.Mzxid {
				return evs // the same, or older: never back
			}
			e.Node = Node{Path: old.Path, Data: r.data, Stat: stat}
			return append(evs, keyed{Event{Type: Changed, Node: e.Node, Old: old}, stat.Mzxid})
		case stat.Czxid < old.Stat.Czxid:
			return evs // an older incarnation, from a server behind us
		}
		// Deleted and made again since it was read: so is everything
		// under it.
		path = old.Path
		evs = c.removeTree(evs, r.path, stat.Czxid)
	}
	e = &entry{Node: Node{Path: path, Data: r.data, Stat: stat}}
	if r.path != c.path {
		p, ok := c.ents[framework.Parent(r.path)]
		if !ok || !c.branches(p.Path) || (p.Stat.Czxid != 0 && stat.Czxid < p.Stat.Czxid) {
			return evs // its parent is not in the view (any more)
		}
		p.kids = append(p.kids, e)
	}
	if c.branches(path) && !listed {
		c.in.mark(kindKids, path)
	}
	c.ents[path] = e
	return append(evs, keyed{Event{Type: Created, Node: e.Node}, stat.Czxid})
}

// branches says whether the node at path may have children in the view:
// it is above the shape's depth.
func (c *Cache) branches(path string) bool {
	d, ok := c.depthOf(path)
	return ok && d < c.shape.depth
}

// applyKids takes one listing: children gone are deleted from the view
// (with what is under them), children new are to be read.
func (c *Cache) applyKids(evs []keyed, r result) []keyed {
	var e *entry
	switch {
	case r.path == c.path && c.shape.kind == shapeChildren:
		evs, e = c.hiddenRoot(evs, r)
	case !r.missing:
		e = c.ents[r.path] // if not known, its data read makes it, and lists it again
	}
	if e == nil || !c.branches(e.Path) {
		return evs
	}
	switch {
	case r.stat.Czxid > e.Stat.Czxid:
		// Made again since its data was read: its data read tells, and
		// makes it listed again.
		c.in.mark(kindData, r.path)
		return evs
	case r.stat.Czxid < e.Stat.Czxid:
		// A listing of an older incarnation: the one in the view is to be
		// listed.
		c.in.mark(kindKids, r.path)
		return evs
	}
	return c.applyListing(evs, e, r)
}

// hiddenRoot returns the entry of a Children cache's path, which no data
// read makes: its listing makes it, new or made again. It is nil if the
// listing says the path is missing (what the view had of it is removed) or
// is of an older incarnation than the one known.
func (c *Cache) hiddenRoot(evs []keyed, r result) ([]keyed, *entry) {
	e, known := c.ents[r.path]
	if r.missing {
		if known {
			evs = c.removeTree(evs, r.path, math.MaxInt64)
		}
		return evs, nil
	}
	if known && e.Stat.Czxid != r.stat.Czxid {
		if r.stat.Czxid < e.Stat.Czxid {
			return evs, nil
		}
		evs = c.removeTree(evs, r.path, r.stat.Czxid)
		known = false
	}
	if !known {
		e = &entry{Node: Node{Path: r.path, Stat: zk.Stat{Czxid: r.stat.Czxid}}}
		c.ents[r.path] = e
	}
	return evs, e
}

// applyListing takes a listing of the incarnation e is, unless it is older
// than the one e has: children new are to be read, children gone are
// removed with what is under them.
func (c *Cache) applyListing(evs []keyed, e *entry, r result) []keyed {
	if r.stat.Pzxid < e.pzxid {
		return evs // an older listing than the one we have: never back
	}
	e.pzxid = r.stat.Pzxid
	now := make(map[string]struct{}, len(r.kids))
	for _, name := range r.kids {
		now[name] = struct{}{}
	}
	have := make(map[string]struct{}, len(e.kids))
	var gone []*entry
	kept := e.kids[:0]
	for _, k := range e.kids {
		name := framework.Base(k.Path)
		have[name] = struct{}{}
		if _, ok := now[name]; ok || k.Stat.Czxid > r.stat.Pzxid {
			// Listed, or made after this listing was taken.
			kept = append(kept, k)
			continue
		}
		gone = append(gone, k)
	}
	clear(e.kids[len(kept):])
	e.kids = kept
	for _, k := range gone {
		evs = c.dropTree(evs, k, r.stat.Pzxid)
	}
	d, _ := c.depthOf(r.path)
	grand := d+1 < c.shape.depth
	for _, name := range r.kids {
		if _, ok := have[name]; !ok {
			// Its data and its children in one round.
			kid := framework.Join(r.path, name)
			c.in.mark(kindData, kid)
			if grand {
				c.in.mark(kindKids, kid)
			}
		}
	}
	return evs
}

// removeTree removes path and everything under it from what the engine
// knows, and returns their Deleted events, deepest first, all ordered at
// key.
func (c *Cache) removeTree(evs []keyed, path string, key int64) []keyed {
	e, ok := c.ents[path]
	if !ok {
		return evs
	}
	if path != c.path {
		if p, ok := c.ents[framework.Parent(path)]; ok {
			if i := slices.Index(p.kids, e); i >= 0 {
				p.kids = slices.Delete(p.kids, i, i+1)
			}
		}
	}
	return c.dropTree(evs, e, key)
}

// dropTree is removeTree of e, whose parent no longer lists it.
func (c *Cache) dropTree(evs []keyed, e *entry, key int64) []keyed {
	for _, k := range e.kids {
		evs = c.dropTree(evs, k, key)
	}
	delete(c.ents, e.Path)
	if !c.hidden(e) {
		evs = append(evs, keyed{Event{Type: Deleted, Node: e.Node}, key})
	}
	return evs
}
