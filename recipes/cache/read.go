package cache

import (
	"context"
	"errors"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
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

// maxReads bounds the reads a round has in flight at once.
const maxReads = 32

// round reads every job (in parallel, up to maxReads at once), then applies
// what they found to the view in one step. A read that failed is marked to
// be read again, and its error returned.
func (c *Cache) round(life, epochCtx context.Context, epoch int, jobs []job) error {
	results := make([]result, len(jobs))
	sem := make(chan struct{}, maxReads)
	var wg sync.WaitGroup
	for i, j := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		read := func(context.Context) {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = c.read(life, epochCtx, epoch, j)
		}
		if !c.rt.Go(read) {
			// Closing: the round's reads are in vain.
			results[i] = result{job: j, err: zkrecipes.ErrClosed}
			wg.Done()
			<-sem
		}
	}
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

// read reads one job, setting a watch unless one of its kind is set and
// waited for already (after a gap on the same session, the session kept
// it).
func (c *Cache) read(life, epochCtx context.Context, epoch int, j job) result {
	sid := c.client.Session().ID
	c.in.mu.Lock()
	_, armed := c.in.armed[j.kind][j.path]
	_, existsArmed := c.in.armed[kindExists][j.path]
	synced := c.in.synced
	c.in.mu.Unlock()
	r, ch := c.fetch(life, j, armed)
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
		if j.path == c.path && j.kind == rootKind && !existsArmed {
			r.again, r.err = c.watchCreation(life, epochCtx, epoch, j.path)
		}
		return r
	}
	if r.err == nil && ch != nil {
		c.arm(epochCtx, epoch, j.kind, j.path, ch)
	}
	if r.err == nil && !c.cfg.withData {
		r.data = nil
	}
	return r
}

// fetch makes j's read, with a watch unless one of its kind is armed
// already; ch is the watch set, if any.
func (c *Cache) fetch(life context.Context, j job, armed bool) (r result, ch <-chan zk.Event) {
	r.job = j
	switch j.kind {
	case kindData:
		if armed {
			r.data, r.stat, r.err = c.client.Get(life, j.path)
		} else {
			r.data, r.stat, ch, r.err = c.client.GetW(life, j.path)
		}
	case kindKids:
		if armed {
			r.kids, r.stat, r.err = c.client.Children(life, j.path)
		} else {
			r.kids, r.stat, ch, r.err = c.client.ChildrenW(life, j.path)
		}
	}
	return r, ch
}

// watchCreation watches the missing root for its creation; again says it
// exists already (made since the read that missed it), so it is to be read
// again.
func (c *Cache) watchCreation(life, epochCtx context.Context, epoch int, path string) (again bool, err error) {
	ok, _, ech, err := c.client.ExistsW(life, path)
	if err != nil {
		return false, err
	}
	c.arm(epochCtx, epoch, kindExists, path, ech)
	return ok, nil
}

// arm waits for the watch ch of path, on a goroutine of its own that ends
// when it fires or its epoch ends, and marks path to be read when it
// fires.
func (c *Cache) arm(epochCtx context.Context, epoch int, k kind, path string, ch <-chan zk.Event) {
	c.in.mu.Lock()
	if c.in.epoch != epoch {
		c.in.mu.Unlock()
		return // the session changed during the read: the next resync sets it again
	}
	c.in.armed[k][path] = struct{}{}
	c.in.mu.Unlock()
	// Refused only once the cache closes or a failed Start halts it: a
	// new Start resets the inbox, and with it what was armed.
	c.rt.Go(func(context.Context) {
		var ev zk.Event
		select {
		case ev = <-ch:
		case <-epochCtx.Done():
			return
		case <-c.client.Done():
			return
		}
		c.in.mu.Lock()
		defer c.in.mu.Unlock()
		if c.in.epoch != epoch {
			return
		}
		delete(c.in.armed[k], path)
		switch {
		case ev.Type == zk.EventNodeDeleted && path != c.path:
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
		c.in.signal()
	})
}
