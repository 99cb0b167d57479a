package cache

import (
	"path"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
)

// newBareCache is a Cache of path in shape with nothing running: the
// engine's steps are driven by hand, for orderings a real server cannot
// produce on demand.
func newBareCache(path string, shape Shape) *Cache {
	c := &Cache{path: path, shape: shape, cfg: config{buffer: 16, withData: true},
		ents: map[string]*entry{}, loaded: make(chan struct{})}
	c.in.init()
	return c
}

// A node of a Tree(2) deleted and made again with a child: the round that
// reads it has its listing land before the new incarnation (in the gap, or
// on the old one) and its data read after it. The new incarnation was never
// listed: it must be listed again, or its children are missed for good.
func TestRecreatedNodeListedBeforeItsDataReadIsListedAgain(t *testing.T) {
	for name, listing := range map[string]result{
		"listing in the gap":             {job: job{"/r/x", kindKids}, missing: true},
		"listing of the old incarnation": {job: job{"/r/x", kindKids}, kids: []string{"a"}, stat: &zk.Stat{Czxid: 10, Pzxid: 11}},
	} {
		t.Run(name, func(t *testing.T) {
			c := newBareCache("/r", Tree(2))
			add := func(p string, czxid int64) {
				e := &entry{Node: Node{Path: p, Stat: zk.Stat{Czxid: czxid, Mzxid: czxid}}}
				c.ents[p] = e
				if parent, ok := c.ents[path.Dir(p)]; ok {
					parent.kids = append(parent.kids, e)
				}
			}
			add("/r", 1)
			add("/r/x", 10)
			add("/r/x/a", 11)
			c.ents["/r"].pzxid, c.ents["/r/x"].pzxid = 10, 11

			c.apply([]result{
				listing,
				{job: job{"/r/x", kindData}, stat: &zk.Stat{Czxid: 20, Mzxid: 20}}, // made again; child c at 21
				{job: job{"/r", kindKids}, kids: []string{"x"}, stat: &zk.Stat{Czxid: 1, Pzxid: 20}},
			})
			next := c.takeDirty()
			if !slices.Contains(next, job{"/r/x", kindKids}) {
				t.Fatalf("the new /r/x (czxid 20) is never listed, so its children are missed until a gap; the next round reads %v", next)
			}
		})
	}
}
