package framework

import (
	"context"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes"
)

// listers coalesces the listings that enqueue makes of one directory. A
// process whose goroutines queue by the thousand on one hot lock would
// otherwise send one listing each: N listings of up to N names, gigabytes
// for ten thousand waiters, behind which the session's pings wait until
// the link is judged dead. One listing serves every caller whose create
// went out before it was sent, since ZooKeeper answers a session's
// requests in order; at most one is in flight per directory, and those who
// come meanwhile share the next.
type listers struct {
	mu   sync.Mutex
	dirs map[string]*dirListing
}

// dirListing is the state of one directory's listings.
type dirListing struct {
	inflight bool
	next     *listing // not sent yet: joined by whoever comes now
}

// listing is one shared Children call. kids is read-only once done is
// closed: every caller gets the same slice. changed is the listing's child
// watch, shared too: go-zookeeper closes a watch's channel once it has
// fired, so every reader learns of the change. It is go-zookeeper's
// channel as it is (rawWatchRead): its event's Path has the namespace, and
// only its firing is read.
type listing struct {
	done    chan struct{}
	kids    []string
	pzxid   int64 // the zxid of the last change to dir's children it saw
	changed <-chan zk.Event
	err     error
}

// listAfter returns a listing of dir that was sent after the call began: it
// sees every node whose create went out before. The call itself runs on the
// client's life, not ctx: others may share it. changed fires at the next
// change of dir's children after the listing; pzxid is the zxid of the last
// change before it.
func (c *Client) listAfter(ctx context.Context, dir string) (kids []string, pzxid int64, changed <-chan zk.Event, err error) {
	mine, err := c.joinListing(dir)
	if err != nil {
		return nil, 0, nil, err
	}
	return mine.wait(ctx)
}

// joinListing is listAfter without the wait: the listing it returns is
// sent after the call (or is being sent, with others'), and wait gives its
// result. It never blocks: enqueue joins from the connection's send loop,
// just before its create is written (the session's TraceCreate).
func (c *Client) joinListing(dir string) (*listing, error) {
	l := &c.listers
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dirs == nil {
		l.dirs = map[string]*dirListing{}
	}
	d := l.dirs[dir]
	if d == nil {
		d = &dirListing{}
		l.dirs[dir] = d
	}
	switch {
	case d.next != nil:
		return d.next, nil
	case d.inflight:
		d.next = &listing{done: make(chan struct{})}
		return d.next, nil
	}
	mine := &listing{done: make(chan struct{})}
	d.inflight = true
	if !c.sendListing(dir, d, mine) {
		d.inflight = false
		delete(l.dirs, dir)
		return nil, zkrecipes.ErrClosed
	}
	return mine, nil
}

// wait returns the listing's result once it is answered, or ctx's error.
func (g *listing) wait(ctx context.Context) (kids []string, pzxid int64, changed <-chan zk.Event, err error) {
	select {
	case <-g.done:
		return g.kids, g.pzxid, g.changed, g.err
	case <-ctx.Done():
		return nil, 0, nil, ctx.Err()
	}
}

// sendListing sends one listing of dir and, when it is answered, the next
// one if anybody joined it. Called with c.listers.mu held.
func (c *Client) sendListing(dir string, d *dirListing, cur *listing) bool {
	return c.Go(func() {
		for cur != nil {
			r, err := c.rawWatchRead(c.life, "childrenw", dir, childrenW)
			cur.kids, cur.changed, cur.err = r.children, r.watch, err
			if r.stat != nil {
				cur.pzxid = r.stat.Pzxid
			}
			close(cur.done)
			c.listers.mu.Lock()
			cur, d.next = d.next, nil
			if cur == nil {
				d.inflight = false
				delete(c.listers.dirs, dir)
			}
			c.listers.mu.Unlock()
		}
	})
}
