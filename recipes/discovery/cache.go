package discovery

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
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

	// rt is named as the service cache, or as the Provider that owns it.
	rt *framework.Runtime

	mu   sync.Mutex
	view *cache.Cache
	// The forwarder's view, from the cache's events: what a subscriber's
	// Snapshot holds. feed is published under mu.
	feed    framework.Feed[CacheEvent]
	known   map[string]known // by node path
	stale   error            // nil while current
	current chan struct{}    // closed at the forwarder's first Current
}

// known is one instance of the forwarder's view, with its node's zxids.
type known struct {
	inst         Instance
	czxid, mzxid int64
}

// CacheEventType says what a CacheEvent reports.
type CacheEventType int

// The events of a Cache's subscription. A list of instances kept by
// applying them to the first Snapshot is the Cache's view.
const (
	// Snapshot is a subscription's first event: the instances as they
	// stand (Instances, sorted as Cache.Instances sorts them); Err says
	// whether the view may be stale.
	Snapshot CacheEventType = iota + 1
	// Added: Instance is in the view from now on (registered, made again
	// after its session was lost, or found after a gap).
	Added
	// Updated: Instance replaces Old, the same instance's node with newer
	// data (Curator's updateService).
	Updated
	// Removed: Instance, as last seen, is gone from the view
	// (unregistered, or its session ended).
	Removed
	// Stale: the view may no longer be the server's; Err says why (it
	// wraps zkrecipes.ErrStale and the reason, as Instances' error does).
	// More Stale events may follow with a graver reason (suspended, then
	// session lost).
	Stale
	// Current: the view was read again after a gap, the events that bring
	// it up to date came before, and it follows the server again.
	Current
)

// String names the event type.
func (t CacheEventType) String() string {
	switch t {
	case Snapshot:
		return "snapshot"
	case Added:
		return "added"
	case Updated:
		return "updated"
	case Removed:
		return "removed"
	case Stale:
		return "stale"
	case Current:
		return "current"
	}
	return fmt.Sprintf("CacheEventType(%d)", int(t))
}

// CacheEvent is one event of a Cache's subscription (see CacheEventType
// for which fields each type sets).
type CacheEvent struct {
	Type CacheEventType
	// Instance: Added, Updated (the new state), Removed (the last state
	// seen).
	Instance Instance
	// Old: Updated, the state before.
	Old Instance
	// Instances: Snapshot, the whole view.
	Instances []Instance
	// Err: Stale, why; Snapshot, why the view may be stale (before Start,
	// zkrecipes.ErrNotStarted), or nil if it is current.
	Err error
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
	path := d.namePath(name)
	c := &Cache{d: d, name: name, path: path, rt: framework.NewRuntime(d.client, cacheRecipe, path), known: map[string]known{}}
	c.stale = c.err(zkrecipes.ErrNotStarted)
	return c, nil
}

func (c *Cache) usable() error {
	if c == nil || c.rt == nil {
		return framework.Invalid(cacheRecipe, "Cache", "Discovery.NewCache")
	}
	return nil
}

// cacheRecipe is the Cache's name in its errors.
const cacheRecipe = "service cache"

func (c *Cache) err(err error) error { return framework.RecipeErr(cacheRecipe, c.path, err) }

// Path returns basePath/<name>.
func (c *Cache) Path() string {
	if c == nil {
		return ""
	}
	return c.path
}

// Start reads the instances and follows them until Close; it returns once
// they have been read (and a subscriber's Snapshot holds them), or with
// ctx's error, leaving nothing running (Start may be called again).
func (c *Cache) Start(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	return c.rt.Start(ctx, c.begin)
}

// begin reads the instances and starts the forwarder; if the read fails,
// it stops the forwarder and forgets what it saw.
func (c *Cache) begin(ctx context.Context) error {
	view, err := cache.New(c.d.client, c.path, cache.Children())
	if err != nil {
		return unwrapCache(err)
	}
	c.mu.Lock()
	c.view = view
	sub := view.Subscribe()
	current, forwarded := make(chan struct{}), make(chan struct{})
	c.current = current
	c.mu.Unlock()
	if !c.rt.Go(func(life context.Context) { defer close(forwarded); c.forward(life, sub) }) {
		sub.Close()
		close(forwarded)
		err = zkrecipes.ErrClosed
	} else {
		err = view.Start(ctx)
	}
	if err != nil {
		_ = view.Close()
		<-forwarded // it applies nothing after the reset below
		c.mu.Lock()
		c.view = nil
		c.replaceLocked(map[string]known{})
		c.staleLocked(zkrecipes.ErrNotStarted)
		c.mu.Unlock()
		return unwrapCache(err)
	}
	// The view is read: so is what the forwarder holds, once it has
	// taken the cache's events up to its Current.
	select {
	case <-current:
	case <-ctx.Done():
	}
	return nil
}

// forward turns the cache's events into the service cache's, keeping
// the view a subscriber's Snapshot holds; it ends with the cache, or
// with life.
func (c *Cache) forward(life context.Context, sub *framework.Subscription[cache.Event]) {
	defer sub.Close()
	for {
		var ev cache.Event
		select {
		case e, ok := <-sub.Changes():
			if !ok {
				return
			}
			ev = e
		case <-life.Done():
			return
		}
		c.mu.Lock()
		switch ev.Type {
		case cache.Snapshot, cache.Overflow:
			next := make(map[string]known, len(ev.Nodes))
			for _, n := range ev.Nodes {
				if k, ok := c.decodeNode(n); ok {
					next[n.Path] = k
				}
			}
			c.replaceLocked(next)
			c.staleLocked(ev.Err)
		case cache.Created, cache.Changed:
			k, ok := c.decodeNode(ev.Node)
			c.putLocked(ev.Node.Path, k, ok)
		case cache.Deleted:
			c.putLocked(ev.Node.Path, known{}, false)
		case cache.Stale:
			c.staleLocked(ev.Err)
		case cache.Current:
			c.staleLocked(nil)
		}
		if c.stale == nil && c.current != nil && !isClosed(c.current) {
			close(c.current)
		}
		c.mu.Unlock()
	}
}

// decodeNode reads an instance's node; false for one that is not
// Curator's JSON (left out of the view, as Instances leaves it out).
func (c *Cache) decodeNode(n cache.Node) (known, bool) {
	inst, err := decode(n.Path, n.Data)
	if err != nil {
		c.d.client.Logger().Debug("zookeeper service cache: skipping a node", "err", err)
		return known{}, false
	}
	return known{inst: inst, czxid: n.Stat.Czxid, mzxid: n.Stat.Mzxid}, true
}

// putLocked makes k the instance at path (none if !ok) and publishes
// the change, if any.
func (c *Cache) putLocked(path string, k known, ok bool) {
	old, had := c.known[path]
	switch {
	case had && (!ok || k.czxid != old.czxid):
		// Gone, or made again (a new node): removed, then added.
		delete(c.known, path)
		c.feed.Publish(CacheEvent{Type: Removed, Instance: old.inst})
		if ok {
			c.known[path] = k
			c.feed.Publish(CacheEvent{Type: Added, Instance: k.inst})
		}
	case had && k.mzxid != old.mzxid:
		c.known[path] = k
		c.feed.Publish(CacheEvent{Type: Updated, Instance: k.inst, Old: old.inst})
	case !had && ok:
		c.known[path] = k
		c.feed.Publish(CacheEvent{Type: Added, Instance: k.inst})
	}
}

// replaceLocked makes next the view, publishing the changes that lead to
// it.
func (c *Cache) replaceLocked(next map[string]known) {
	paths := slices.Collect(maps.Keys(c.known))
	for path := range next {
		if _, ok := c.known[path]; !ok {
			paths = append(paths, path)
		}
	}
	slices.Sort(paths)
	for _, path := range paths {
		k, ok := next[path]
		c.putLocked(path, k, ok)
	}
}

// staleLocked records why the view may be stale (nil: it is current)
// and publishes it if that changed.
func (c *Cache) staleLocked(reason error) {
	if reason == nil {
		if c.stale != nil {
			c.stale = nil
			c.feed.Publish(CacheEvent{Type: Current})
		}
		return
	}
	err := c.err(unwrapCache(reason))
	if c.stale != nil && c.stale.Error() == err.Error() {
		return
	}
	c.stale = err
	c.feed.Publish(CacheEvent{Type: Stale, Err: err})
}

// snapshotLocked is the forwarder's view, sorted by node path.
func (c *Cache) snapshotLocked() []Instance {
	out := make([]Instance, 0, len(c.known))
	for _, path := range slices.Sorted(maps.Keys(c.known)) {
		out = append(out, c.known[path].inst)
	}
	return out
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

// Instances returns the instances as last read, sorted by node name (by
// id, but for DynamicSequential instances, whose node names begin with
// the protected prefix); nodes that
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
	view := c.view
	c.mu.Unlock()
	switch {
	case c.rt.Closed():
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

// Subscribe returns a subscription to the instances: first a Snapshot of
// them as they stand (empty before Start has read them), then each
// instance Added, Updated and Removed (Curator's
// ServiceCacheListener.cacheChanged, with what changed), and Stale and
// Current as the view stops and starts being current (Curator's
// stateChanged). Its channel is closed after Close of the Cache, once
// what was queued has been taken, or at once by Close of the
// subscription; a reader that stops reading before then must Close it. A reader that falls more than framework.DefaultBound
// changes behind is told, never skipped silently: the subscription ends,
// its Err wrapping zkrecipes.ErrFellBehind (docs/vocabulary.md).
// A nil or zero Cache's subscription has ended.
func (c *Cache) Subscribe() *framework.Subscription[CacheEvent] {
	if c.usable() != nil {
		var f framework.Feed[CacheEvent]
		f.End(nil)
		return f.Subscribe()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.feed.SubscribeWith(CacheEvent{Type: Snapshot, Instances: c.snapshotLocked(), Err: c.stale})
}

// Close stops following the instances and ends the subscriptions. It is
// idempotent.
func (c *Cache) Close() error {
	if err := c.usable(); err != nil {
		return err
	}
	return c.rt.Close(func(context.Context) error {
		c.mu.Lock()
		view := c.view
		c.mu.Unlock()
		if view != nil {
			_ = view.Close()
		}
		c.feed.End(nil)
		return nil
	})
}
