package discovery

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/errs"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// Cache is Curator's ServiceCache: the instances of one service, kept
// current from the nodes under basePath/<name> by the module's cache
// (recipes/cache, Children shape), which holds their data. Make one with
// Discovery.NewCache.
type Cache struct {
	d    *Discovery
	name string
	path string

	mu      sync.Mutex
	started bool
	closed  bool
	view    *cache.Cache
	fwd     sync.WaitGroup
	feed    framework.Feed[struct{}]
}

// NewCache returns a cache of service name's instances. Nothing is sent
// before Start.
func (d *Discovery) NewCache(name string) (*Cache, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if err := checkSegment("name", name); err != nil {
		return nil, d.err(err)
	}
	return &Cache{d: d, name: name, path: d.namePath(name)}, nil
}

func (c *Cache) usable() error {
	if c == nil || c.d == nil {
		return framework.RecipeErr("service cache", "", fmt.Errorf("%w: a nil or zero Cache: make one with Discovery.NewCache", zkrecipes.ErrInvalidArgument))
	}
	return nil
}

func (c *Cache) err(err error) error { return framework.RecipeErr("service cache", c.path, err) }

// Path returns basePath/<name>.
func (c *Cache) Path() string {
	if c == nil {
		return ""
	}
	return c.path
}

// Start reads the instances and follows them until Close; it returns once
// they have been read, or with ctx's error.
func (c *Cache) Start(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return c.err(errs.ErrNilContext)
	}
	return c.err(c.start(ctx))
}

// start is Start with an error that names no recipe.
func (c *Cache) start(ctx context.Context) error {
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return zkrecipes.ErrClosed
	case c.started:
		c.mu.Unlock()
		return zkrecipes.ErrStarted
	}
	c.started = true
	view, err := cache.New(c.d.client, c.path, cache.Children())
	if err != nil {
		c.started = false
		c.mu.Unlock()
		return unwrapCache(err)
	}
	c.view = view
	sub := view.Subscribe()
	c.fwd.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.fwd.Done()
		for ev := range sub.Changes() {
			switch ev.Type {
			case cache.Created, cache.Changed, cache.Deleted, cache.Overflow:
				c.feed.Publish(struct{}{})
			}
		}
	}()
	if err := view.Start(ctx); err != nil {
		// Nothing keeps running: Start may be called again.
		_ = view.Close()
		c.fwd.Wait()
		c.mu.Lock()
		c.view, c.started = nil, false
		c.mu.Unlock()
		return unwrapCache(err)
	}
	return nil
}

// unwrapCache returns the reason inside an error of the module's cache,
// so that the service cache's error names it once ("service cache
// /services/billing: may be stale: suspended").
func unwrapCache(err error) error {
	var re *framework.RecipeError
	if errors.As(err, &re) && re.Recipe == "cache" {
		return re.Err
	}
	return err
}

// Instances returns the instances as last read, sorted by id; nodes that
// are not Curator's JSON are left out. The error is nil while the view is
// current; otherwise it wraps zkrecipes.ErrStale and the reason
// (zkrecipes.ErrSuspended, zkrecipes.ErrSessionLost, or nothing more while
// the view is read again after a gap), and the instances are returned all
// the same. Before Start it is zkrecipes.ErrNotStarted.
func (c *Cache) Instances() ([]Instance, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	insts, err := c.instances()
	return insts, c.err(err)
}

// instances is Instances with an error that names no recipe: the Cache's
// and the Provider's each name themselves.
func (c *Cache) instances() ([]Instance, error) {
	c.mu.Lock()
	view, closed := c.view, c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return nil, zkrecipes.ErrClosed
	case view == nil:
		return nil, zkrecipes.ErrNotStarted
	}
	nodes, err := view.Children(c.path)
	if err != nil {
		return nil, unwrapCache(err)
	}
	out := make([]Instance, 0, len(nodes))
	for _, n := range nodes {
		inst, err := decode(n.Path, n.Data)
		if err != nil {
			c.d.client.Logger().Debug("zookeeper service cache: skipping a node", "err", err)
			continue
		}
		out = append(out, inst)
	}
	return out, unwrapCache(view.Err())
}

// Subscribe returns a subscription that receives a value each time the
// instances change (Curator's ServiceCacheListener.cacheChanged); read
// Instances for the new list.
func (c *Cache) Subscribe() *framework.Subscription[struct{}] {
	if c.usable() != nil {
		var f framework.Feed[struct{}]
		f.End(nil)
		return f.Subscribe()
	}
	return c.feed.Subscribe()
}

// Close stops following the instances and ends the subscriptions. It is
// idempotent.
func (c *Cache) Close() error {
	if err := c.usable(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	view := c.view
	c.mu.Unlock()
	if view != nil {
		_ = view.Close()
	}
	c.fwd.Wait()
	c.feed.End(nil)
	return nil
}
