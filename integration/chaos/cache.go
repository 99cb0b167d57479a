package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// The cache (recipes/cache) in the suite. Every contender keeps a tree
// cache of the recipe's path and writes to the tree under every fault:
// ephemeral nodes of its own under container parents (made, changed,
// deleted; gone with its session when the nemesis expires or kills it),
// and changes to the others' nodes. Its subscription is applied to its
// first snapshot as a reader would, and every event is checked against that
// view as it comes: nothing reported twice (a create of a node it has, a
// delete of one it does not), nothing going back (a change to an older or
// equal mzxid, or into another incarnation). Once quiet (after quiesce,
// when the writes have stopped), each contender's cache must be current,
// its view must equal the server's, and the view its events built must
// equal its view.

// Cache is the cache's recipe name.
const Cache Recipe = "cache"

// What a cache contender reports.
const (
	// KindCacheBroken: an event of the contender's subscription broke its
	// view (Detail says how).
	KindCacheBroken Kind = "cache-broken"
	// KindCacheStale: the subscription said the view may be stale
	// (Detail: why); KindCacheCurrent: current again.
	KindCacheStale   Kind = "cache-stale"
	KindCacheCurrent Kind = "cache-current"
	// KindCacheFinal: after quiesce, whether (Accepted) the cache caught up
	// with the server; Detail: the node events it delivered, or the
	// difference.
	KindCacheFinal Kind = "cache-final"
)

// cacheView is a subscription applied to its first snapshot.
type cacheView struct {
	mu     sync.Mutex
	nodes  map[string]cache.Node
	events int
}

func (v *cacheView) apply(ev cache.Event) (problem string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch ev.Type {
	case cache.Snapshot, cache.Overflow:
		v.nodes = map[string]cache.Node{}
		for _, n := range ev.Nodes {
			v.nodes[n.Path] = n
		}
	case cache.Created:
		v.events++
		if _, ok := v.nodes[ev.Node.Path]; ok {
			problem = "created twice: " + ev.Node.Path
		}
		v.nodes[ev.Node.Path] = ev.Node
	case cache.Changed:
		v.events++
		old, ok := v.nodes[ev.Node.Path]
		switch {
		case !ok:
			problem = "changed but not in the view: " + ev.Node.Path
		case old.Stat.Czxid != ev.Node.Stat.Czxid:
			problem = fmt.Sprintf("changed into another incarnation: %s czxid %d -> %d", ev.Node.Path, old.Stat.Czxid, ev.Node.Stat.Czxid)
		case old.Stat.Mzxid >= ev.Node.Stat.Mzxid:
			problem = fmt.Sprintf("went back: %s mzxid %d after %d", ev.Node.Path, ev.Node.Stat.Mzxid, old.Stat.Mzxid)
		}
		v.nodes[ev.Node.Path] = ev.Node
	case cache.Deleted:
		v.events++
		if _, ok := v.nodes[ev.Node.Path]; !ok {
			problem = "deleted but not in the view: " + ev.Node.Path
		}
		delete(v.nodes, ev.Node.Path)
	}
	return problem
}

// rendering is a view as sorted "path data czxid/mzxid" lines, what the
// final comparison compares.
func rendering(nodes []cache.Node) string {
	lines := make([]string, 0, len(nodes))
	for _, n := range nodes {
		lines = append(lines, fmt.Sprintf("%s %q %d/%d", n.Path, n.Data, n.Stat.Czxid, n.Stat.Mzxid))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func (v *cacheView) rendering() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	nodes := make([]cache.Node, 0, len(v.nodes))
	for _, n := range v.nodes {
		nodes = append(nodes, n)
	}
	return rendering(nodes)
}

// cacheLoop is a cache contender: a tree cache and its subscription, writes
// until ctx ends, then the final comparison, then its own nodes deleted.
func (c *contender) cacheLoop(ctx context.Context) error {
	ch, err := cache.New(c.client, c.spec.Path, cache.Tree(cache.AnyDepth))
	if err != nil {
		return err
	}
	defer ch.Close()
	if !startRetrying(ctx, ch.Start, "start") {
		return nil
	}
	var view cacheView
	sub := ch.Subscribe()
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		for ev := range sub.Changes() {
			switch ev.Type {
			case cache.Stale:
				c.emit(Event{Kind: KindCacheStale, Detail: errString(ev.Err)})
			case cache.Current:
				c.emit(Event{Kind: KindCacheCurrent})
			}
			if p := view.apply(ev); p != "" {
				c.emit(Event{Kind: KindCacheBroken, Detail: p})
			}
		}
	}()
	defer func() { _ = ch.Close(); <-followed }()

	own := map[string]bool{}
	for ctx.Err() == nil {
		c.cacheWrite(ctx, own)
		c.think(ctx)
	}
	c.cacheFinal(ch, &view)
	dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for p := range own {
		if err := c.client.Delete(dctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			fmt.Fprintln(os.Stderr, "chaos contender: deleting", p, err)
		}
	}
	return nil
}

// cacheWrite is one write to the tree: a node of the contender's own made,
// changed or deleted, or another's changed.
func (c *contender) cacheWrite(ctx context.Context, own map[string]bool) {
	if s := c.client.Session().ID; s != c.session && s != 0 {
		c.session = s
		c.emit(Event{Kind: KindSession, Session: s})
	}
	c.freezePoint()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	group := fmt.Sprintf("%s/g%d", c.spec.Path, c.rng.IntN(3))
	mine := fmt.Sprintf("%s/%s-%d", group, c.spec.ID, c.rng.IntN(3))
	data := []byte(fmt.Sprint(c.rng.IntN(1000)))
	switch c.rng.IntN(4) {
	case 0:
		if _, err := c.client.Create(wctx, mine, data, framework.WithMode(framework.Ephemeral), framework.WithParentContainers()); err == nil || errors.Is(err, zk.ErrNodeExists) {
			own[mine] = true
		}
	case 1:
		_, _ = c.client.Set(wctx, mine, data, -1)
	case 2:
		_ = c.client.Delete(wctx, mine, -1)
	default:
		// Someone else's node, if there is one.
		kids, _, err := c.client.Children(wctx, group)
		if err == nil && len(kids) > 0 {
			_, _ = c.client.Set(wctx, framework.Join(group, kids[c.rng.IntN(len(kids))]), data, -1)
		}
	}
}

// cacheFinal waits until the cache is current and agrees with the server
// and with the view its events built, and reports whether it did within a
// minute (the other contenders stop writing meanwhile).
func (c *contender) cacheFinal(ch *cache.Cache, view *cacheView) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var diff string
	for {
		server, err := c.readTree(ctx, c.spec.Path)
		if err == nil {
			nodes, cerr := ch.Nodes()
			got, built := rendering(nodes), view.rendering()
			stale := ch.Err()
			switch {
			case cerr != nil:
				diff = "cache: " + cerr.Error()
			case stale != nil:
				diff = "still stale: " + stale.Error()
			case got != server:
				diff = fmt.Sprintf("the cache's view differs from the server's:\ncache:\n%s\nserver:\n%s", got, server)
			case built != got:
				diff = fmt.Sprintf("the events applied to the first snapshot differ from the view:\nevents:\n%s\nview:\n%s", built, got)
			default:
				view.mu.Lock()
				n := view.events
				view.mu.Unlock()
				c.emit(Event{Kind: KindCacheFinal, Accepted: true, Detail: fmt.Sprintf("events=%d nodes=%d", n, len(nodes))})
				return
			}
		} else {
			diff = "reading the server: " + err.Error()
		}
		if !sleep(ctx, 50*time.Millisecond) { // polling until the writes stop and the view settles
			c.emit(Event{Kind: KindCacheFinal, Detail: diff})
			return
		}
	}
}

// readTree reads path's subtree (path included) from the server, after a
// sync, as the cache renders it.
func (c *contender) readTree(ctx context.Context, path string) (string, error) {
	if err := c.client.Sync(ctx, "/"); err != nil {
		return "", err
	}
	var nodes []cache.Node
	var read func(p string) error
	read = func(p string) error {
		data, st, err := c.client.Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		nodes = append(nodes, cache.Node{Path: p, Data: bytes.Clone(data), Stat: *st})
		kids, _, err := c.client.Children(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := read(framework.Join(p, k)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := read(path); err != nil {
		return "", err
	}
	return rendering(nodes), nil
}

// CacheStats are a cache run's numbers.
type CacheStats struct {
	Stale, Current, Finals int
	Details                []string
}

// CheckCache checks a cache run's history (see the comment at the top of
// this file).
func CheckCache(history []Event) (*Report, CacheStats) {
	r := &Report{Losses: map[string]int{}, Faults: map[string]int{}, NotGranted: map[string]int{}}
	var s CacheStats
	for _, e := range history {
		switch e.Kind {
		case KindFault:
			r.Faults[strings.Fields(e.Detail + " ?")[0]]++
		case KindCacheBroken:
			r.violate("cache-event", "%s: %s", e.Client, e.Detail)
		case KindCacheStale:
			s.Stale++
		case KindCacheCurrent:
			s.Current++
		case KindCacheFinal:
			s.Finals++
			if !e.Accepted {
				r.violate("cache-stale-after-quiesce", "%s: %s", e.Client, e.Detail)
			} else {
				s.Details = append(s.Details, e.Client+": "+e.Detail)
			}
		}
	}
	if s.Finals == 0 {
		r.violate("no-progress", "no cache reached the end of the run")
	}
	slices.Sort(s.Details)
	return r, s
}

// finishCache checks the run and writes its files: the cache's end of Run.
func (r *run) finishCache(history []Event) *Result {
	r.t.Helper()
	rep, stats := CheckCache(history)
	r.addRunFindings(rep)
	var b strings.Builder
	fmt.Fprintf(&b, "chaos %s: seed %d, %d contenders, session timeout %s, %s\n",
		r.cfg.Recipe, r.cfg.Seed, r.cfg.Contenders, r.cfg.SessionTimeout, time.Since(r.started).Round(time.Second))
	fmt.Fprintf(&b, "  caches went stale %d times and current %d times; %d caught up at the end: %s\n",
		stats.Stale, stats.Current, stats.Finals, strings.Join(stats.Details, ", "))
	fmt.Fprintf(&b, "  faults: %s\n", counts(rep.Faults))
	writeViolations(&b, rep)
	res := &Result{Config: r.cfg, Report: rep, Summary: b.String()}
	r.writeFiles(history, res)
	return res
}
