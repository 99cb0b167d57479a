package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/retry"
)

// kind is what of a node a read or a watch is about.
type kind int

const (
	kindData   kind = iota // its data and Stat (a data watch; for a missing root, an exists watch)
	kindKids               // its children (a child watch)
	kindExists             // only for the root while it is missing
)

// inbox is how the watches' goroutines and the session's follower tell the
// engine what to read: they never wait for it.
type inbox struct {
	mu     sync.Mutex
	dirty  [2]map[string]struct{} // by kindData, kindKids
	armed  [3]map[string]struct{} // a watch of that kind is set and waited for
	resync bool                   // read everything again (a gap)
	// synced is the session the last resync's Sync was made on: only a
	// read on it knows the server caught up with what the view holds.
	synced int64
	epoch  int                // watches of older epochs (sessions) are forgotten
	cancel context.CancelFunc // ends the current epoch's watch goroutines
	wake   chan struct{}      // capacity 1
	// refused is closed when the first load fails for good (zk.ErrNoAuth).
	refused     chan struct{}
	refusedOnce *sync.Once
}

func (in *inbox) init() {
	in.wake = make(chan struct{}, 1)
	in.reset()
}

// reset forgets everything, for a new Start.
func (in *inbox) reset() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for i := range in.dirty {
		in.dirty[i] = map[string]struct{}{}
	}
	for i := range in.armed {
		in.armed[i] = map[string]struct{}{}
	}
	in.resync = false
	in.synced = 0
	in.epoch++
	in.refused = make(chan struct{})
	in.refusedOnce = new(sync.Once)
}

func (in *inbox) signal() {
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *inbox) markResync() {
	in.mu.Lock()
	in.resync = true
	in.mu.Unlock()
	in.signal()
}

func (in *inbox) mark(k kind, path string) {
	in.mu.Lock()
	in.dirty[k][path] = struct{}{}
	in.mu.Unlock()
	in.signal()
}

// newEpoch forgets every watch set so far (the session that held them is
// gone) and returns the context of the next epoch's watches.
func (in *inbox) newEpoch(life context.Context) (context.Context, int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cancel != nil {
		in.cancel()
	}
	for i := range in.armed {
		in.armed[i] = map[string]struct{}{}
	}
	in.epoch++
	ctx, cancel := context.WithCancel(life)
	in.cancel = cancel
	return ctx, in.epoch
}

// followSession turns the client's session states into staleness and
// resyncs: Suspended and Lost make the view stale and call for a resync
// once connected; Lost also forgets the watches, which went with the
// session.
func (c *Cache) followSession(life context.Context) {
	sub := c.client.Subscribe()
	defer sub.Close()
	first := true
	for {
		select {
		case ev, ok := <-sub.Changes():
			if !ok {
				return
			}
			if first {
				first = false
				if ev.State.IsConnected() {
					// The state as it stands, connected: the first read
					// is on its way. A link down already is a change.
					continue
				}
			}
			switch ev.State {
			case conn.StateSuspended:
				c.goStale(zkrecipes.ErrSuspended, false)
			case conn.StateLost:
				c.goStale(zkrecipes.ErrSessionLost, true)
			case conn.StateConnected, conn.StateReconnected, conn.StateReadOnly:
				if ev.NewSession {
					c.in.mu.Lock()
					c.in.armed = [3]map[string]struct{}{{}, {}, {}}
					c.in.epoch++
					c.in.mu.Unlock()
				}
				c.in.markResync()
			case conn.StateClosed:
				return
			}
		case <-life.Done():
			return
		}
	}
}

// goStale makes the view stale for reason, and says so to the
// subscriptions if it was current or the reason is graver; it calls for a
// resync, after forgetting the watches if the session that held them is
// gone (their goroutines end with the next epoch's start).
//
// The resync is called for under mu, with the Stale: goCurrent, which
// decides under mu too, then either comes before the Stale or sees the
// resync to do, and a Current never follows the Stale of a gap not read.
func (c *Cache) goStale(reason error, forgetWatches bool) {
	err := fmt.Errorf("%w: %w", zkrecipes.ErrStale, reason)
	c.mu.Lock()
	defer c.mu.Unlock()
	if forgetWatches {
		c.in.mu.Lock()
		c.in.armed = [3]map[string]struct{}{{}, {}, {}}
		c.in.epoch++
		c.in.mu.Unlock()
	}
	c.in.markResync()
	if c.stale != nil && (errors.Is(c.stale, reason) || errors.Is(c.stale, zkrecipes.ErrSessionLost)) {
		return
	}
	c.stale = err
	c.feed.Publish(Event{Type: Stale, Err: err})
}

// run is the engine: it reads what the inbox says, applies the difference
// to the view, and waits for more, until life ends.
func (c *Cache) run(life context.Context) {
	pacer := c.rt.Pacer()
	var epochCtx context.Context
	epoch := -1
	for life.Err() == nil {
		if !c.client.State().IsConnected() {
			select {
			case <-c.in.wake:
			case <-life.Done():
			}
			continue
		}
		c.in.mu.Lock()
		if c.in.epoch != epoch {
			c.in.mu.Unlock()
			epochCtx, epoch = c.in.newEpoch(life)
			c.in.mu.Lock()
		}
		resync := c.in.resync
		c.in.resync = false
		c.in.mu.Unlock()
		if resync {
			// After a gap, the server we are on may lag what we saw:
			// make it catch up before reading (integration/lagread).
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
			if err := c.round(life, epochCtx, epoch, work); err != nil {
				c.retryLater(life, err, pacer, nil)
			} else {
				pacer.Reset()
			}
			continue
		}
		// Nothing left to read: current, unless a gap came meanwhile.
		c.goCurrent()
		select {
		case <-c.in.wake:
		case <-life.Done():
		}
	}
}

// syncPath is what a resync syncs: the path, or its parent while it does
// not exist (a sync of a missing node fails).
func (c *Cache) syncPath() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.ents[c.path]; ok && e.czxid != 0 {
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

// goCurrent makes the view current, and says so if it was stale, unless
// there is something left to read: a gap (a resync not taken yet) or a
// change, or the link is down. The engine calls it when it has nothing
// left to read; it decides under mu, as goStale does (see there).
func (c *Cache) goCurrent() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stale == nil {
		return
	}
	c.in.mu.Lock()
	quiet := !c.in.resync && len(c.in.dirty[kindData]) == 0 && len(c.in.dirty[kindKids]) == 0
	c.in.mu.Unlock()
	if !quiet || !c.client.State().IsConnected() {
		return
	}
	c.stale = nil
	c.feed.Publish(Event{Type: Current})
	select {
	case <-c.loaded:
	default:
		close(c.loaded)
	}
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
	r := result{job: j}
	sid := c.client.Session().ID
	c.in.mu.Lock()
	_, armed := c.in.armed[j.kind][j.path]
	_, existsArmed := c.in.armed[kindExists][j.path]
	synced := c.in.synced
	c.in.mu.Unlock()
	var ch <-chan zk.Event
	switch j.kind {
	case kindData:
		if armed {
			r.data, r.stat, r.err = c.client.Get(life, j.path)
		} else {
			r.data, r.stat, ch, r.err = c.client.GetWRaw(life, j.path)
		}
	case kindKids:
		if armed {
			r.kids, r.stat, r.err = c.client.Children(life, j.path)
		} else {
			r.kids, r.stat, ch, r.err = c.client.ChildrenWRaw(life, j.path)
		}
	}
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
			// A missing root is watched for its creation.
			ok, _, ech, err := c.client.ExistsWRaw(life, j.path)
			switch {
			case err != nil:
				r.err = err
			case ok:
				r.again = true
				c.arm(epochCtx, epoch, kindExists, j.path, ech)
			default:
				c.arm(epochCtx, epoch, kindExists, j.path, ech)
			}
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
	for _, k := range evs {
		switch k.ev.Type {
		case Created, Changed:
			n := k.ev.Node
			c.view[n.Path] = &n
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
			return append(evs, keyed{Event{Type: Changed, Node: *n, Old: *old}, r.stat.Mzxid})
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
	return append(evs, keyed{Event{Type: Created, Node: *n}, r.stat.Czxid})
}

// applyKids takes one listing: children gone are deleted from the view
// (with what is under them), children new are to be read.
func (c *Cache) applyKids(evs []keyed, r result) []keyed {
	e, known := c.ents[r.path]
	hiddenRoot := r.path == c.path && c.shape.kind == shapeChildren
	if r.missing {
		if hiddenRoot && known {
			evs = c.removeTree(evs, r.path, math.MaxInt64)
		}
		return evs
	}
	if hiddenRoot {
		if known && e.czxid != r.stat.Czxid {
			if r.stat.Czxid < e.czxid {
				return evs
			}
			evs = c.removeTree(evs, r.path, r.stat.Czxid)
			known = false
		}
		if !known {
			e = &entry{czxid: r.stat.Czxid, kids: map[string]struct{}{}}
			c.ents[r.path] = e
		}
	}
	if !known && !hiddenRoot {
		return evs // its data read makes it, and lists it again
	}
	if e.kids == nil {
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
		evs = append(evs, keyed{Event{Type: Deleted, Node: *e.node}, key})
	}
	return evs
}
