package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
)

// result is the outcome of one job.
type result struct {
	job
	data    []byte
	stat    *zk.Stat
	kids    []string
	missing bool // the node does not exist
	again   bool // read it again: it appeared between two reads
	err     error
}

// errUnsynced is why a read or a Sync is made again: it was answered on a
// session the resync has not synced.
var errUnsynced = errors.New("answered on a session not synced yet")

// maxReads bounds the reads a round has in flight at once: enough to keep
// the server busy, few enough that a ping waits behind no more than a few
// milliseconds of them (the session's proof of life).
const maxReads = 64

// round reads every job, up to maxReads at once: the engine and as many
// of the runtime's tasks as that allows take the jobs in turn, each
// sending its next read as its last one is answered, so that the session
// carries that many pipelined requests and no more. A round of one read
// (a change told by a watch) is read by the engine alone. Then it applies
// what they found to the view in one step. A read that failed is marked
// to be read again, and its error returned.
func (c *Cache) round(life context.Context, w *framework.Watches, epoch int, jobs []job) error {
	results := make([]result, len(jobs))
	var next atomic.Int64
	var wg sync.WaitGroup
	reader := func(context.Context) {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(jobs) {
				return
			}
			results[i] = c.read(life, w, epoch, jobs[i])
		}
	}
	for range min(maxReads, len(jobs)) - 1 {
		wg.Add(1)
		if !c.rt.Go(func(ctx context.Context) { defer wg.Done(); reader(ctx) }) {
			wg.Done()
			break // closing: the engine reads what is left, in vain
		}
	}
	reader(life)
	wg.Wait()
	var firstErr error
	for _, r := range results {
		switch {
		case r.err != nil:
			if errors.Is(r.err, zk.ErrNoAuth) && !c.isLoaded() {
				c.refuse(r.err)
			}
			if firstErr == nil {
				firstErr = r.err
			}
			c.in.mu.Lock()
			c.in.dirty[r.kind][r.path] = struct{}{}
			c.in.mu.Unlock()
		case r.again:
			c.in.mu.Lock()
			c.in.dirty[r.kind][r.path] = struct{}{}
			c.in.mu.Unlock()
		}
	}
	c.apply(results)
	return firstErr
}

func (c *Cache) isLoaded() bool {
	select {
	case <-c.loaded:
		return true
	default:
		return false
	}
}

// refuse ends a Start that cannot read the path.
func (c *Cache) refuse(err error) {
	c.mu.Lock()
	if c.fatal == nil {
		c.fatal = err
	}
	c.mu.Unlock()
	c.in.mu.Lock()
	once, ch := c.in.refusedOnce, c.in.refused
	c.in.mu.Unlock()
	once.Do(func() { close(ch) })
}

// read reads one job, with a watch unless the session changed since
// the round began (the next resync reads it again). The framework sets a
// watch only where none of its kind waits for the node already (after a
// gap on the same session, the session kept it): see framework.Into.
func (c *Cache) read(life context.Context, w *framework.Watches, epoch int, j job) result {
	sid := c.client.Session().ID
	c.in.mu.Lock()
	watch := c.in.epoch == epoch
	synced := c.in.synced
	c.in.mu.Unlock()
	r := c.fetch(life, j, w, watch)
	if errors.Is(r.err, zk.ErrNoNode) && j.path == c.path && (sid != synced || c.client.Session().ID != sid) {
		// The root's absence removes the whole view, and no Stat says how
		// old it is: it counts only from a server known to have caught up
		// with the view, a read on the session the resync synced. A read
		// retried on a new session (after an expiry go-zookeeper forgets
		// the last zxid it saw, and a follower with local sessions makes
		// one alone) may reach a follower behind the root's creation.
		r.err = errUnsynced
		return r
	}
	if errors.Is(r.err, zk.ErrNoNode) {
		r.err, r.missing = nil, true
		rootKind := kindData
		if c.shape.kind == shapeChildren {
			rootKind = kindKids
		}
		if j.path == c.path && j.kind == rootKind {
			r.again, r.err = c.watchCreation(life, w, epoch, j.path)
		}
		return r
	}
	if r.err == nil && !c.cfg.withData {
		r.data = nil
	}
	return r
}

// fetch makes j's read, with a watch into w if watch says so.
func (c *Cache) fetch(life context.Context, j job, w *framework.Watches, watch bool) (r result) {
	r.job = j
	switch {
	case j.kind == kindData && watch:
		r.data, r.stat, _, r.err = c.client.GetW(life, j.path, framework.Into(w))
	case j.kind == kindData:
		r.data, r.stat, r.err = c.client.Get(life, j.path)
	case watch:
		r.kids, r.stat, _, r.err = c.client.ChildrenW(life, j.path, framework.Into(w))
	default:
		r.kids, r.stat, r.err = c.client.Children(life, j.path)
	}
	return r
}

// watchCreation watches the missing root for its creation; again says it
// exists already (made since the read that missed it), so it is to be read
// again.
func (c *Cache) watchCreation(life context.Context, w *framework.Watches, epoch int, path string) (again bool, err error) {
	c.in.mu.Lock()
	if c.in.epoch != epoch {
		c.in.mu.Unlock()
		return false, nil // the session changed during the read: the next resync watches it
	}
	c.in.mu.Unlock()
	ok, _, _, err := c.client.ExistsW(life, path, framework.Into(w))
	if err != nil {
		return false, err
	}
	return ok, nil
}

// takeFired takes the events of the epoch's watches (w) and marks what
// each calls to be read; it says whether there were any.
func (c *Cache) takeFired(w *framework.Watches, epoch int) bool {
	if w == nil {
		return false
	}
	fired := w.Take()
	if len(fired) == 0 {
		return false
	}
	c.in.mu.Lock()
	defer c.in.mu.Unlock()
	if c.in.epoch != epoch {
		return true // a session's watches gone with it: the resync reads everything
	}
	for _, f := range fired {
		k := kindOf(f.Kind)
		path := f.Path
		switch {
		case f.Type == zk.EventNodeDeleted && path != c.path:
			// Gone: its parent's listing says so, with the zxid that
			// orders it; and a read of it finds a node made again at the
			// same path, which the listing cannot tell by its name.
			c.in.dirty[kindKids][framework.Parent(path)] = struct{}{}
			c.in.dirty[kindData][path] = struct{}{}
		case k == kindExists:
			c.in.dirty[kindData][path] = struct{}{}
			c.in.dirty[kindKids][path] = struct{}{}
		default:
			c.in.dirty[k][path] = struct{}{}
		}
	}
	return true
}

// kindOf is the cache's kind of a watch the framework delivered.
func kindOf(k framework.WatchKind) kind {
	switch k {
	case framework.WatchChildren:
		return kindKids
	case framework.WatchExists:
		return kindExists
	}
	return kindData
}
