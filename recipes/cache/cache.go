package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// recipe is the cache's name in its errors.
const recipe = "cache"

// errLoading is why a view is stale before its first read, and while it
// reads again after a gap.
var errLoading = fmt.Errorf("%w: reading it", zkrecipes.ErrStale)

// Node is one node of the view: its path (without the client's
// namespace), its data (nil with WithoutData) and its Stat, as last read.
type Node struct {
	Path string
	Data []byte
	Stat zk.Stat
}

func (n Node) clone() Node {
	n.Data = bytes.Clone(n.Data)
	return n
}

// EventType says what an Event reports.
type EventType int

// The events of a subscription. A view kept by applying them to the first
// Snapshot (and replaced by each Overflow) is the cache's view.
const (
	// Snapshot is a subscription's first event: the whole view (Nodes) as
	// it stands; Err says whether it may be stale.
	Snapshot EventType = iota + 1
	// Created: Node is in the view from now on.
	Created
	// Changed: Node replaces Old, the same node (same Czxid) with a newer
	// Mzxid.
	Changed
	// Deleted: Node, as last seen, is gone from the view. A node deleted
	// and made again is a Deleted and then a Created.
	Deleted
	// Stale: the view may no longer be the server's; Err says why. More
	// Stale events may follow with a graver reason (suspended, then
	// session lost).
	Stale
	// Current: the view was read again after a gap, the events that bring
	// it up to date were delivered, and it follows the server again.
	Current
	// Overflow: the reader fell more than the buffer behind; the events it
	// missed are gone, and Nodes is the whole view after them (Err says
	// whether it may be stale): replace the view with it, as with a
	// Snapshot, and go on applying the events that follow.
	Overflow
)

// String names the event type.
func (t EventType) String() string {
	switch t {
	case Snapshot:
		return "snapshot"
	case Created:
		return "created"
	case Changed:
		return "changed"
	case Deleted:
		return "deleted"
	case Stale:
		return "stale"
	case Current:
		return "current"
	case Overflow:
		return "overflow"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one event of a subscription (see EventType for which fields
// each type sets). Its Data and Nodes are shared by every subscription:
// a reader must not change them.
type Event struct {
	Type EventType
	// Node: Created, Changed (the new state), Deleted (the last state
	// seen).
	Node Node
	// Old: Changed, the state before.
	Old Node
	// Nodes: Snapshot and Overflow, the whole view sorted by path.
	Nodes []Node
	// Err: Stale, why; Snapshot and Overflow, why the view may be stale,
	// or nil if it is current.
	Err error
}

// Cache is a view of a node, its children or a subtree, kept in memory and
// up to date with one-shot watches. Its methods may be called from any
// goroutine; make one with New.
type Cache struct {
	client *framework.Client
	path   string
	shape  Shape
	cfg    config
	rt     *framework.Runtime

	// mu guards the view and the feed: every change of the view and its
	// event are made under it, so that a snapshot is always the sum of the
	// events published before it.
	mu   sync.Mutex
	ents map[string]*entry // the view, and what the engine knows, by path; the root's even when hidden
	// pending is, while a round's events are published one by one, the
	// published state of each node they change (nil: not in the view),
	// which ents are already past: a catch-up made meanwhile shows the
	// view as of the events published so far. Nil between rounds.
	pending map[string]*Node
	stale   error         // nil while current
	loaded  chan struct{} // closed at the first Current
	fatal   error         // a read the server refused for good, before loaded
	feed    framework.Feed[Event]

	// in is what the watches and the session tell the engine.
	in inbox
}

// entry is the engine's knowledge of one node, which is also the view's:
// a Node is what the view shows (its Data is never changed, only
// replaced), so that each node costs one entry and the path, shared with
// the map's key, the watches and the reads. The hidden root of a
// Children cache has an entry (Path and Stat.Czxid) but is not in the view.
type entry struct {
	Node
	kids  []*entry // the children in the view, in no order; none at or below the depth
	pzxid int64    // of the listing kids came from
}

// New returns a Cache of path in shape. It sends nothing; Start reads the
// view. A nil client, the zero Shape, a negative depth or a bad option is
// zkrecipes.ErrInvalidArgument, a malformed path (or the root)
// zkrecipes.ErrInvalidPath.
func New(client *framework.Client, path string, shape Shape, opts ...Option) (*Cache, error) {
	if client == nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	if err := shape.check(); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	cfg, err := framework.Configure(recipe, path, config{buffer: DefaultBufferSize, withData: true}, opts, Option.applyCache)
	if err != nil {
		return nil, err
	}
	c := &Cache{
		client: client,
		path:   path,
		shape:  shape,
		cfg:    cfg,
		rt:     framework.NewRuntime(client, recipe, path),
		ents:   map[string]*entry{},
		stale:  errLoading,
		loaded: make(chan struct{}),
	}
	c.in.init()
	return c, nil
}

// usable says why c cannot be used: it is nil or a zero Cache.
func (c *Cache) usable() error {
	if c == nil || c.rt == nil {
		return framework.Invalid(recipe, "Cache", "New")
	}
	return nil
}

func (c *Cache) err(err error) error { return c.rt.Err(err) }

// Path returns the path the cache was made with.
func (c *Cache) Path() string {
	if c == nil {
		return ""
	}
	return c.path
}

// Shape returns the shape the cache was made with.
func (c *Cache) Shape() Shape {
	if c == nil {
		return Shape{}
	}
	return c.shape
}

// Start reads the view and sets the watches that keep it current until
// Close, and returns once the view is current (a missing path is a view
// like another: empty), or with ctx's error (nothing keeps running then,
// and Start may be called again). A path this client may not read fails
// it with the server's zk.ErrNoAuth. A second Start after one succeeded
// is zkrecipes.ErrStarted; after Close, zkrecipes.ErrClosed.
func (c *Cache) Start(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	return c.rt.Start(ctx, c.begin)
}

// begin starts the engine and waits for the view to be current, or for
// the first read to be refused for good.
func (c *Cache) begin(ctx context.Context) error {
	c.mu.Lock()
	c.fatal = nil
	loaded := c.loaded
	c.mu.Unlock()
	c.in.reset()
	c.in.markResync()
	refused := c.in.refused
	if !c.rt.Go(c.followSession) || !c.rt.Go(c.run) {
		return zkrecipes.ErrClosed
	}
	select {
	case <-loaded:
		return nil
	case <-refused:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.fatal
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops following the path and ends every subscription (each
// delivers what it had queued, then its channel is closed). A cache makes
// no node, so it deletes nothing, and it does not close the client. It
// waits for the cache's goroutines, which end at once; it is idempotent and
// returns nil. The watches it had set stay registered in the session until
// their node changes or the session ends (go-zookeeper cannot remove one),
// at the cost of a small buffered channel each, and no goroutine.
func (c *Cache) Close() error {
	if err := c.usable(); err != nil {
		return err
	}
	return c.rt.Close(func(context.Context) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.feed.End(nil)
		return nil
	})
}

// Get returns the node at path from the view, and whether it is there. It
// sends nothing; Err says whether the view may be stale. The Data is a
// copy of the caller's own.
func (c *Cache) Get(path string) (Node, bool, error) {
	if err := c.usable(); err != nil {
		return Node{}, false, err
	}
	if err := framework.ValidatePath(path); err != nil {
		return Node{}, false, c.err(err)
	}
	if err := c.rt.Ready(context.Background()); err != nil {
		return Node{}, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.ents[path]
	if !ok || c.hidden(e) {
		return Node{}, false, nil
	}
	return e.clone(), true, nil
}

// Children returns the children of path in the view, sorted by name (for
// the Children shape, Children(Path()) is the whole view). A path not in
// the view, or below the shape's depth, has none. It sends nothing.
func (c *Cache) Children(path string) ([]Node, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := framework.ValidatePath(path); err != nil {
		return nil, c.err(err)
	}
	if err := c.rt.Ready(context.Background()); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.ents[path]
	if !ok {
		return nil, nil
	}
	out := make([]Node, 0, len(e.kids))
	for _, k := range e.kids {
		out = append(out, k.clone())
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Nodes returns the whole view, sorted by path. It sends nothing.
func (c *Cache) Nodes() ([]Node, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := c.rt.Ready(context.Background()); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.snapshotLocked()
	for i := range out {
		out[i] = out[i].clone()
	}
	return out, nil
}

// snapshotLocked returns the view sorted by path, sharing the data: as
// published so far, while a round's events are (see pending).
func (c *Cache) snapshotLocked() []Node {
	out := make([]Node, 0, len(c.ents))
	for p, e := range c.ents {
		if _, ok := c.pending[p]; !ok && !c.hidden(e) {
			out = append(out, e.Node)
		}
	}
	for _, n := range c.pending {
		if n != nil {
			out = append(out, *n)
		}
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// hidden says whether e is the hidden root of a Children cache, which is
// not in the view.
func (c *Cache) hidden(e *entry) bool {
	return c.shape.kind == shapeChildren && e.Path == c.path
}

// Err is nil while the view is current: read over the client's current
// link, with every watch set, and every change the watches reported read.
// Otherwise it wraps zkrecipes.ErrStale and the reason (zkrecipes.ErrSuspended,
// zkrecipes.ErrSessionLost, or nothing more while the cache reads again).
// Before Start it is zkrecipes.ErrNotStarted; after Close, or the
// client's, zkrecipes.ErrClosed.
func (c *Cache) Err() error {
	if err := c.usable(); err != nil {
		return err
	}
	if err := c.rt.Ready(context.Background()); err != nil {
		return err
	}
	c.mu.Lock()
	stale := c.stale
	c.mu.Unlock()
	// The client knows of a dead link before the engine hears of it.
	switch c.client.State() {
	case conn.StateLost:
		return c.err(fmt.Errorf("%w: %w", zkrecipes.ErrStale, zkrecipes.ErrSessionLost))
	case conn.StateSuspended:
		if !errors.Is(stale, zkrecipes.ErrSessionLost) {
			return c.err(fmt.Errorf("%w: %w", zkrecipes.ErrStale, zkrecipes.ErrSuspended))
		}
	}
	return c.err(stale)
}

// Subscribe returns a subscription to the view: first a Snapshot of it as
// it stands (empty before Start has read it), then every change in the
// order ZooKeeper made them (see the package documentation), and Stale
// and Current as the view stops and starts being current. A reader that
// falls more than the buffer (WithBufferSize) behind loses what piled up
// and gets one Overflow event with the whole view in its place: the cache
// never waits for a reader, and a reader's memory stays bounded: the
// module's one rule, with the catch-up in place of an end
// (docs/vocabulary.md). The
// channel is closed after Close of the Cache, once what was queued has
// been taken, or at once by Close of the subscription; a reader that stops
// reading before then must Close it. A nil or zero Cache's subscription
// has ended.
func (c *Cache) Subscribe() *framework.Subscription[Event] {
	if c.usable() != nil {
		var f framework.Feed[Event]
		f.End(nil)
		return f.Subscribe()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	first := Event{Type: Snapshot, Nodes: c.snapshotLocked(), Err: c.stale}
	// catchUp runs inside Publish, which the engine calls under mu.
	catchUp := func() Event { return Event{Type: Overflow, Nodes: c.snapshotLocked(), Err: c.stale} }
	return c.feed.SubscribeBounded(first, c.cfg.buffer, catchUp)
}
