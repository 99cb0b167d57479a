package cache

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/zkrecipes/zkrecipes/framework"
)

// keyed is an event and the zxid that orders it among a round's.
type keyed struct {
	ev  Event
	key int64
	// node is the engine's Node of a Created or Changed, which the view
	// shares (a Node is never changed once made, only replaced).
	node *Node
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
	for _, k := range evs {
		switch k.ev.Type {
		case Created, Changed:
			c.view[k.node.Path] = k.node
		case Deleted:
			delete(c.view, k.ev.Node.Path)
		}
		c.feed.Publish(k.ev)
	}
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
	depth, _ := c.depthOf(r.path)
	n := &Node{Path: r.path, Data: r.data, Stat: *r.stat}
	if known && e.node != nil {
		old := e.node
		switch {
		case r.stat.Czxid == old.Stat.Czxid:
			if r.stat.Mzxid <= old.Stat.Mzxid {
				return evs // the same, or older: never back
			}
			e.node = n
			return append(evs, keyed{Event{Type: Changed, Node: *n, Old: *old}, r.stat.Mzxid, n})
		case r.stat.Czxid < old.Stat.Czxid:
			return evs // an older incarnation, from a server behind us
		}
		// Deleted and made again since it was read: so is everything
		// under it.
		evs = c.removeTree(evs, r.path, r.stat.Czxid)
	}
	if r.path != c.path {
		p, ok := c.ents[framework.Parent(r.path)]
		if !ok || p.kids == nil || (p.czxid != 0 && r.stat.Czxid < p.czxid) {
			return evs // its parent is not in the view (any more)
		}
		p.kids[framework.Base(r.path)] = struct{}{}
	}
	e = &entry{node: n, depth: depth, czxid: r.stat.Czxid}
	if depth < c.shape.depth {
		e.kids = map[string]struct{}{}
		if !listed {
			c.in.mark(kindKids, r.path)
		}
	}
	c.ents[r.path] = e
	return append(evs, keyed{Event{Type: Created, Node: *n}, r.stat.Czxid, n})
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
	if e == nil || e.kids == nil {
		return evs
	}
	switch {
	case r.stat.Czxid > e.czxid:
		// Made again since its data was read: its data read tells, and
		// makes it listed again.
		c.in.mark(kindData, r.path)
		return evs
	case r.stat.Czxid < e.czxid:
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
	if known && e.czxid != r.stat.Czxid {
		if r.stat.Czxid < e.czxid {
			return evs, nil
		}
		evs = c.removeTree(evs, r.path, r.stat.Czxid)
		known = false
	}
	if !known {
		e = &entry{czxid: r.stat.Czxid, kids: map[string]struct{}{}}
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
		if _, ok := e.kids[name]; !ok {
			// Its data and its children in one round.
			kid := framework.Join(r.path, name)
			c.in.mark(kindData, kid)
			if e.depth+1 < c.shape.depth {
				c.in.mark(kindKids, kid)
			}
		}
	}
	for name := range e.kids {
		if _, ok := now[name]; ok {
			continue
		}
		kid := framework.Join(r.path, name)
		if k, ok := c.ents[kid]; ok && k.czxid > r.stat.Pzxid {
			continue // made after this listing was taken
		}
		evs = c.removeTree(evs, kid, r.stat.Pzxid)
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
	for name := range e.kids {
		evs = c.removeTree(evs, framework.Join(path, name), key)
	}
	delete(c.ents, path)
	if path != c.path {
		if p, ok := c.ents[framework.Parent(path)]; ok {
			delete(p.kids, framework.Base(path))
		}
	}
	if e.node != nil {
		evs = append(evs, keyed{Event{Type: Deleted, Node: *e.node}, key, nil})
	}
	return evs
}
