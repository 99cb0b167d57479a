package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
)

// What zkr ls reads: the queue of a lock path in any of the recipes' node
// layouts, which are Curator's, so that Java contenders show up too.

// queueKind is the recipe whose layout a path has, as zkr ls names it.
type queueKind string

const (
	kindNone      queueKind = ""          // no queue nodes (yet)
	kindLock      queueKind = "lock"      // lock-: mutex, zkr lock and elect, LeaderSelector
	kindRWLock    queueKind = "rwlock"    // __READ__ and __WRIT__
	kindSemaphore queueKind = "semaphore" // locks/ and leases/
	kindLatch     queueKind = "latch"     // latch-: LeaderLatch
)

// The recipes' node names (Curator's).
const (
	markLock   = "lock-"
	markRead   = "__READ__"
	markWrite  = "__WRIT__"
	markLatch  = "latch-"
	markLease  = "lease-"
	semLocks   = "locks"
	semLeases  = "leases"
	roleHolds  = "holds"
	roleWaits  = "waits"
	sideRead   = "read"
	sideWrite  = "write"
	sideLease  = "lease"
	getWorkers = 16 // reads of queue nodes in flight at once
)

// queue is one look at a path: its kind and its nodes in queue order.
type queue struct {
	Path    string       `json:"path"`
	Kind    queueKind    `json:"kind"`
	Time    time.Time    `json:"time"`
	Holding int          `json:"holding"`
	Waiting int          `json:"waiting"`
	Nodes   []queueEntry `json:"queue"`
	// Also are the other kinds with nodes in the path: kinds do not
	// exclude each other, so a path used by two at once is two queues.
	Also []queueKind `json:"also,omitempty"`
	// Others are children of a path with no queue nodes: a directory of
	// lock paths, perhaps.
	Others []string `json:"children,omitempty"`
}

// queueEntry is one node of a queue.
type queueEntry struct {
	Pos  int    `json:"pos"`
	Role string `json:"role"`           // holds or waits
	Side string `json:"side,omitempty"` // read, write (rwlock) or lease (semaphore)
	// ID is the participant id: the node's data.
	ID string `json:"id"`
	// Session is the session that owns the node (its ephemeralOwner).
	Session string `json:"session"`
	// Token is the node's czxid, the fencing token of the hold on it: a
	// holder's alone, nil for a waiter, which holds nothing.
	Token *int64 `json:"token"`
	// Created is the node's ctime, by the server's clock.
	Created time.Time `json:"created"`
	// ForMS is how long the node has waited or held, in milliseconds
	// (see lsHelp for what "held" measures).
	ForMS int64 `json:"for_ms"`
	// Node is the node's path below Path.
	Node string `json:"node"`

	owner int64     // the session, as a number
	czxid int64     // the node's czxid, Token or not
	since time.Time // when FOR starts
}

// nodeInfo is what a read of one queue node gives.
type nodeInfo struct {
	name  string // below the queue's path
	data  []byte
	owner int64
	czxid int64
	ctime time.Time
	gone  bool // deleted between the listing and the read
}

// readQueue looks at path once. With watch, it also returns channels (at
// most three) that fire at the next change of what it listed; they end
// with ctx.
func readQueue(ctx context.Context, c *framework.Client, path string, watch bool) (*queue, []<-chan zk.Event, error) {
	q := &queue{Path: path, Time: time.Now()}
	var watches []<-chan zk.Event
	l, err := readLayout(path, func(dir string) ([]string, error) {
		kids, ch, err := listDir(ctx, c, dir, watch)
		if ch != nil {
			watches = append(watches, ch)
		}
		return kids, err
	})
	if err != nil {
		return nil, nil, err
	}
	switch {
	case len(l.kinds) > 0:
		q.Kind, q.Also = l.kinds[0], l.kinds[1:]
	case l.semDirs:
		q.Kind = kindSemaphore // what a semaphore leaves once nobody holds or waits
	default:
		q.Kind = kindNone
		q.Others = slices.Sorted(slices.Values(l.kids))
	}
	switch q.Kind {
	case kindNone:
	case kindSemaphore:
		lease, err := readNodes(ctx, c, path, semLeases, engine.Sort(l.leases, markLease))
		if err != nil {
			return nil, nil, err
		}
		lock, err := readNodes(ctx, c, path, semLocks, engine.Sort(l.locks, markLock))
		if err != nil {
			return nil, nil, err
		}
		q.Nodes = semaphoreRoles(lease, lock)
	default:
		markers := kindMarkers[q.Kind]
		nodes, err := readNodes(ctx, c, path, "", engine.Sort(queueNodes(l.kids, markers...), markers...))
		if err != nil {
			return nil, nil, err
		}
		if q.Kind == kindRWLock {
			q.Nodes = rwlockRoles(nodes)
		} else {
			q.Nodes = firstHolds(nodes)
		}
	}
	for i := range q.Nodes {
		e := &q.Nodes[i]
		e.Pos = i + 1
		if e.Role == roleHolds {
			q.Holding++
		} else {
			q.Waiting++
		}
	}
	return q, watches, nil
}

// listDir lists dir's children; a missing dir has none. With watch, ch
// fires when the children change, or when a missing dir appears.
func listDir(ctx context.Context, c *framework.Client, dir string, watch bool) (kids []string, ch <-chan zk.Event, err error) {
	for {
		if !watch {
			kids, _, err = c.Children(ctx, dir)
		} else {
			kids, _, ch, err = c.ChildrenW(ctx, dir)
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return kids, ch, err
		}
		if !watch {
			return nil, nil, nil
		}
		ok, _, ch, err := c.ExistsW(ctx, dir)
		if err != nil || !ok {
			return nil, ch, err
		}
		// Made in between: list it.
	}
}

// kindMarkers are the node names of the kinds that queue in the path
// itself; a semaphore queues below it, in leases/ and locks/.
var kindMarkers = map[queueKind][]string{
	kindRWLock: {markRead, markWrite},
	kindLatch:  {markLatch},
	kindLock:   {markLock},
}

// kindOrder is the order in which zkr ls picks the kind it shows of a path
// that holds several.
var kindOrder = []queueKind{kindRWLock, kindLatch, kindLock, kindSemaphore}

// layout is what a path's children say of the queues in it.
type layout struct {
	kids          []string    // the path's children
	leases, locks []string    // a semaphore's lease nodes and its internal lock's
	semDirs       bool        // leases/ or locks/ is there, with nodes or not
	kinds         []queueKind // the kinds with nodes in the path, in kindOrder
}

// readLayout lists path, and a semaphore's directories in it, with list,
// and tells which kinds of queue have nodes there. Kinds do not exclude
// each other, so a path used by two at once has both; a kind's nodes are
// those named as it names them, so that another kind's nodes, or a
// semaphore's directories, are never taken for its contenders.
func readLayout(path string, list func(dir string) ([]string, error)) (*layout, error) {
	kids, err := list(path)
	if err != nil {
		return nil, err
	}
	l := &layout{kids: kids}
	for _, dir := range []struct {
		name   string
		marker string
		nodes  *[]string
	}{{semLeases, markLease, &l.leases}, {semLocks, markLock, &l.locks}} {
		if !slices.Contains(kids, dir.name) {
			continue
		}
		l.semDirs = true
		sub, err := list(framework.Join(path, dir.name))
		if err != nil {
			return nil, err
		}
		*dir.nodes = queueNodes(sub, dir.marker)
	}
	for _, k := range kindOrder {
		if k == kindSemaphore && len(l.leases)+len(l.locks) > 0 ||
			k != kindSemaphore && len(queueNodes(kids, kindMarkers[k]...)) > 0 {
			l.kinds = append(l.kinds, k)
		}
	}
	return l, nil
}

// queueNodes are the names among kids of queue nodes with one of markers:
// the marker, then ZooKeeper's ten-digit sequence number, at the end (the
// recipes' names and Curator's, protected or not).
func queueNodes(kids []string, markers ...string) []string {
	var out []string
	for _, k := range kids {
		for _, m := range markers {
			if n := len(k) - 10 - len(m); n >= 0 && k[n:n+len(m)] == m && isDigits(k[n+len(m):]) {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

func isDigits(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
}

// readNodes reads the nodes dir/sub/names (several at a time), in the
// order given, leaving out those deleted since they were listed.
func readNodes(ctx context.Context, c *framework.Client, dir, sub string, names []string) ([]nodeInfo, error) {
	infos := make([]nodeInfo, len(names))
	errs := make([]error, len(names))
	slots := make(chan struct{}, getWorkers)
	var wg sync.WaitGroup
	for i, name := range names {
		if sub != "" {
			name = sub + "/" + name
		}
		infos[i].name = name
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return nil, ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-slots }()
			data, st, err := c.Get(ctx, framework.Join(dir, name))
			switch {
			case errors.Is(err, zk.ErrNoNode):
				infos[i].gone = true
			case err != nil:
				errs[i] = err
			default:
				infos[i].data, infos[i].owner, infos[i].czxid = data, st.EphemeralOwner, st.Czxid
				infos[i].ctime = time.UnixMilli(st.Ctime)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := infos[:0]
	for _, n := range infos {
		if !n.gone {
			out = append(out, n)
		}
	}
	return out, nil
}

func entry(n nodeInfo, role, side string) queueEntry {
	e := queueEntry{
		Role: role, Side: side, ID: string(n.data), Session: fmt.Sprintf("0x%x", n.owner),
		Created: n.ctime, Node: n.name,
		owner: n.owner, czxid: n.czxid, since: n.ctime,
	}
	if role == roleHolds {
		token := n.czxid
		e.Token = &token
	}
	return e
}

// firstHolds is the mutex's and the latch's rule: the first node holds
// (or leads), everyone else waits.
func firstHolds(nodes []nodeInfo) []queueEntry {
	out := make([]queueEntry, len(nodes))
	for i, n := range nodes {
		role := roleWaits
		if i == 0 {
			role = roleHolds
		}
		out[i] = entry(n, role, "")
	}
	return out
}

// rwlockRoles is Curator's read-write lock: a writer holds when it is
// first; a reader holds when no writer is before it. Sessions do not
// matter (two locks on one client contend as two processes), except in a
// downgrade: its read node takes the write node's sequence number, made by
// the same session, and both hold whichever sorts first.
func rwlockRoles(nodes []nodeInfo) []queueEntry {
	out := make([]queueEntry, len(nodes))
	for i, n := range nodes {
		write := isWrite(n.name)
		holds := true
		for _, before := range nodes[:i] {
			if downgradePair(before, n) {
				continue
			}
			if write || isWrite(before.name) {
				holds = false
				break
			}
		}
		role, side := roleWaits, sideRead
		if holds {
			role = roleHolds
		}
		if write {
			side = sideWrite
		}
		out[i] = entry(n, role, side)
	}
	return out
}

// downgradePair says whether a and b are a write node and the read node of
// its downgrade: the same session and sequence number, one of each.
func downgradePair(a, b nodeInfo) bool {
	return a.owner == b.owner && isWrite(a.name) != isWrite(b.name) &&
		engine.SortKey(a.name, markRead, markWrite) == engine.SortKey(b.name, markRead, markWrite)
}

// isWrite tells a write node from a read node by the later of the two
// markers, as the sort key is taken after it.
func isWrite(name string) bool {
	return strings.LastIndex(name, markWrite) > strings.LastIndex(name, markRead)
}

// semaphoreRoles is Curator's InterProcessSemaphoreV2: an acquirer takes
// the internal lock (locks/), makes its lease node (leases/) and waits,
// still holding the lock, until the leases fit the maximum. So the lease
// nodes made by the session at the head of locks/ since it got there wait
// (briefly, if they fit: it is about to let go of the lock), every other
// lease holds, and the rest of locks/ waits for its turn to make a lease
// node. The maximum itself is not in ZooKeeper (unless a SharedCount
// holds it, which zkr does not know of).
func semaphoreRoles(leases, locks []nodeInfo) []queueEntry {
	var head *nodeInfo
	if len(locks) > 0 {
		head = &locks[0]
	}
	out := make([]queueEntry, 0, len(leases)+len(locks))
	pending := false
	for _, n := range leases {
		role := roleHolds
		if head != nil && n.owner == head.owner && n.czxid > head.czxid {
			role, pending = roleWaits, true
		}
		out = append(out, entry(n, role, sideLease))
	}
	for i, n := range locks {
		if i == 0 && pending {
			continue // shown by its waiting lease
		}
		out = append(out, entry(n, roleWaits, sideLease))
	}
	return out
}
