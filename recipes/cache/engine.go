package cache

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/retry"
)

// run is the engine: it reads what the inbox says, applies the difference
// to the view, and waits for more, until life ends.
func (c *Cache) run(life context.Context) {
	pacer := c.rt.Pacer()
	var w *framework.Watches
	epoch := -1
	for life.Err() == nil {
		c.takeFired(w, epoch)
		if !c.client.State().IsConnected() {
			c.wait(life, w)
			continue
		}
		c.in.mu.Lock()
		if c.in.epoch != epoch {
			c.in.mu.Unlock()
			w, epoch = c.in.newEpoch()
			c.in.mu.Lock()
		}
		resync := c.in.resync
		c.in.resync = false
		c.in.mu.Unlock()
		if resync {
			// After a gap, the server we are on may lag what we saw:
			// make it catch up before reading (integration/internal/lagread).
			again := func() { c.in.mu.Lock(); c.in.resync = true; c.in.mu.Unlock() }
			sid := c.client.Session().ID
			if err := c.client.Sync(life, c.syncPath()); err != nil {
				c.retryLater(life, err, pacer, again)
				continue
			}
			if c.client.Session().ID != sid {
				// Retried on a new session, which may have been made
				// after the Sync reached the server: sync it again.
				c.retryLater(life, errUnsynced, pacer, again)
				continue
			}
			c.in.mu.Lock()
			c.in.synced = sid
			c.in.mu.Unlock()
			c.markAll()
		}
		work := c.takeDirty()
		if len(work) > 0 {
			if err := c.round(life, w, epoch, work); err != nil {
				c.retryLater(life, err, pacer, nil)
			} else {
				pacer.Reset()
			}
			continue
		}
		// Nothing left to read: current, unless a gap came meanwhile.
		if c.takeFired(w, epoch) {
			continue
		}
		c.goCurrent()
		c.wait(life, w)
	}
}

// wait waits for the inbox, the epoch's watches (w) or the end of life.
func (c *Cache) wait(life context.Context, w *framework.Watches) {
	var fired <-chan struct{}
	if w != nil {
		fired = w.Ready()
	}
	select {
	case <-c.in.wake:
	case <-fired:
	case <-life.Done():
	}
}

// syncPath is what a resync syncs: the path, or its parent while it does
// not exist (a sync of a missing node fails).
func (c *Cache) syncPath() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.ents[c.path]; ok && e.Stat.Czxid != 0 {
		return c.path
	}
	return "/"
}

// retryLater waits for pacer's next pause before the engine tries again
// (again: what to mark again, if anything).
func (c *Cache) retryLater(life context.Context, err error, pacer *retry.Pacer, again func()) {
	if again != nil {
		again()
	}
	if life.Err() != nil || errors.Is(err, zkrecipes.ErrClosed) {
		return
	}
	c.rt.Retry(life, pacer, err)
}

// markAll marks every node the engine knows, and the root, to be read
// again.
func (c *Cache) markAll() {
	c.mu.Lock()
	paths := make([]string, 0, len(c.ents)+1)
	for p := range c.ents {
		paths = append(paths, p)
	}
	c.mu.Unlock()
	c.in.mu.Lock()
	defer c.in.mu.Unlock()
	c.in.dirty[kindData][c.path] = struct{}{}
	c.in.dirty[kindKids][c.path] = struct{}{}
	for _, p := range paths {
		c.in.dirty[kindData][p] = struct{}{}
		c.in.dirty[kindKids][p] = struct{}{}
	}
}

// job is one read of a round.
type job struct {
	path string
	kind kind
}

// takeDirty takes what is to be read, leaving out what the shape does
// not read (the hidden root's data, the children of nodes at the depth).
func (c *Cache) takeDirty() []job {
	c.in.mu.Lock()
	var out []job
	for k := range c.in.dirty {
		for p := range c.in.dirty[k] {
			out = append(out, job{path: p, kind: kind(k)})
		}
		c.in.dirty[k] = map[string]struct{}{}
	}
	c.in.mu.Unlock()
	out = slices.DeleteFunc(out, func(j job) bool {
		d, ok := c.depthOf(j.path)
		switch {
		case !ok || d > c.shape.depth:
			return true
		case j.kind == kindData:
			return c.shape.kind == shapeChildren && d == 0
		default:
			return d >= c.shape.depth
		}
	})
	return out
}

// depthOf returns how many levels below the cache's path p is, and
// whether it is under it at all.
func (c *Cache) depthOf(p string) (int, bool) {
	if p == c.path {
		return 0, true
	}
	prefix := c.path + "/"
	if !strings.HasPrefix(p, prefix) {
		return 0, false
	}
	return strings.Count(p[len(prefix):], "/") + 1, true
}
