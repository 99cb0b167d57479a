// Package contend is the one engine under every lock-like recipe, as
// Curator's LockInternals: contenders queue as ephemeral-sequential nodes in
// one directory, and a small Driver decides from the sorted queue whether a
// contender holds and, if not, which single node it waits on.
//
// The mutex (first holds), the read lock (no writer before me), the
// semaphore (index < max leases) and the leader selector are Drivers over
// this loop.
//
// Beyond Curator, the loop saves a round trip per handoff: when the node a
// contender waits on was the only one in its way in the last sorted
// snapshot, that node's deletion grants at once, without listing the queue
// again. This is safe because a newer node always gets a higher sequence
// number: nothing can appear ahead of us. A recipe where something can (the
// read-write lock's downgrade) says so by never setting OnlyObstacle.
//
// A deep queue of one process goes further: a client remembers the nodes it
// granted with nothing ahead, so that when such a node goes, the waiter
// behind it holds without listing the queue (Heads). Each handoff
// in a queue of 10,000 used to list 10,000 names.
package contend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

// errSessionLost is returned when the session our node belonged to is gone
// while we waited; the node went with it (or is being deleted). Enter
// queues again on it; should it reach a caller, it matches
// zkrecipes.ErrSessionLost.
var errSessionLost = fmt.Errorf("%w (while queued)", zkrecipes.ErrSessionLost)

// Err gives an error of the engine or the client the sentinels every recipe
// documents: the one error mapping of the module. closed says the recipe
// itself was closed: what failed because of it says zkrecipes.ErrClosed.
func Err(err error, closed bool) error {
	switch {
	case err == nil || errors.Is(err, zkrecipes.ErrClosed):
		return err
	case closed || errors.Is(err, zk.ErrClosing):
		return errors.Join(zkrecipes.ErrClosed, err)
	}
	return err
}

// Outcome is the metrics' outcome of an acquire that ended with err.
func Outcome(err error) metrics.Outcome {
	switch {
	case err == nil:
		return metrics.Acquired
	case errors.Is(err, zkrecipes.ErrWouldBlock):
		return metrics.WouldBlock
	case errors.Is(err, context.DeadlineExceeded):
		return metrics.Timeout
	case errors.Is(err, context.Canceled), errors.Is(err, zkrecipes.ErrClosed):
		return metrics.Cancelled
	}
	return metrics.Failed
}

// Decision is a Driver's verdict on one sorted snapshot.
type Decision struct {
	// Holds: we hold now.
	Holds bool
	// Watch is the index of the node to wait on when we do not hold.
	Watch int
	// OnlyObstacle: that node is the only one keeping us from holding, so its
	// deletion grants without a re-list.
	OnlyObstacle bool
}

// Driver decides ownership, as Curator's LockInternalsDriver. It is given
// the queue up to and including our node (see Ahead).
type Driver interface {
	Decide(sorted []string, ours int) Decision
}

// DriverFunc adapts a function to Driver.
type DriverFunc func(sorted []string, ours int) Decision

// Decide calls f.
func (f DriverFunc) Decide(sorted []string, ours int) Decision { return f(sorted, ours) }

// First is the mutex's driver (and a semaphore of one): the first node
// holds; everyone else waits on the node just before it.
// A maxHolders below one is taken as one: nobody holding is no lock.
func First(maxHolders int) Driver { return first(max(maxHolders, 1)) }

type first int

func (f first) Decide(sorted []string, ours int) Decision {
	if ours < int(f) {
		return Decision{Holds: true}
	}
	w := ours - int(f)
	return Decision{Watch: w, OnlyObstacle: w == 0}
}

// look is Ahead and Decide in one pass, with no sort: First needs only how
// many are ahead and the f-th nearest of them, and a new waiter at the tail
// of a deep queue would otherwise sort the whole queue (10,000 waiters
// queueing at once spent tens of CPU seconds on it). It returns the node
// to watch by name; ok is false if ours is not among children.
func (f first) look(children []string, ours string, markers []string) (d Decision, watch string, ok bool) {
	key := SortKey(ours, markers...)
	ahead := 0
	var nearest []keyed // the f nearest ahead of ours, nearest last
	for _, c := range children {
		if c == ours {
			ok = true
			continue
		}
		k := SortKey(c, markers...)
		if !(k < key || (k == key && c < ours)) {
			continue
		}
		ahead++
		n := newKeyed(c, k)
		i, _ := slices.BinarySearchFunc(nearest, n, keyed.compare)
		if len(nearest) < int(f) {
			nearest = slices.Insert(nearest, i, n)
		} else if i > 0 {
			copy(nearest, nearest[1:i])
			nearest[i-1] = n
		}
	}
	if !ok {
		return Decision{}, "", false
	}
	d = f.Decide(nil, ahead)
	if d.Holds {
		return d, "", true
	}
	return d, nearest[0].name, true
}

// Request describes one contender.
type Request struct {
	Client *framework.Client
	// Dir is the queue's directory; it is created (as containers) if needed.
	Dir string
	// Name is the node name before the sequence number, e.g. "lock-".
	Name string
	// Markers are the strings after whose last occurrence a name's sort key
	// begins (Curator's fixForSorting); default: Name.
	Markers []string
	Data    []byte
	Driver  Driver
	// NoWait gives up at once, deleting our node, if we do not hold.
	NoWait bool
	// Queued, if not nil, is called with our node each time it is in the
	// queue (again, after a lost session): a recipe's Start returns then.
	Queued func(path string)
}

// SortKey is Curator's fixForSorting: the part of name after the last
// occurrence of any marker, or the whole name if none occurs.
func SortKey(name string, markers ...string) string {
	if k, ok := seqKey(name, markers); ok {
		return k
	}
	return searchKey(name, markers)
}

// searchKey is SortKey by searching name backwards for each marker.
func searchKey(name string, markers []string) string {
	best := -1
	for _, m := range markers {
		if i := strings.LastIndex(name, m); i >= 0 && i+len(m) > best {
			best = i + len(m)
		}
	}
	if best < 0 {
		return name
	}
	return name[best:]
}

// seqKey is SortKey for the names nearly every queue holds: a marker, then
// ZooKeeper's ten-digit sequence number at the end. A marker whose last
// byte is not a digit cannot occur again inside those digits, so that
// occurrence is the last one of every marker, and no backwards search
// through the name is needed (it was the largest cost of a look at the
// queue). ok is false when SortKey must search.
func seqKey(name string, markers []string) (string, bool) {
	n := len(name)
	if n < 10 {
		return "", false
	}
	for i := n - 10; i < n; i++ {
		if name[i] < '0' || name[i] > '9' {
			return "", false
		}
	}
	found := false
	for _, m := range markers {
		if m == "" || (m[len(m)-1] >= '0' && m[len(m)-1] <= '9') {
			return "", false
		}
		if n-10 >= len(m) && name[n-10-len(m):n-10] == m {
			found = true
		}
	}
	if !found {
		return "", false
	}
	return name[n-10:], true
}

// Sort orders children as Curator does: by SortKey, as strings. Every child
// counts, as in Curator, so that both see the same queue.
func Sort(children []string, markers ...string) []string {
	out := slices.Clone(children)
	slices.SortFunc(out, func(a, b string) int {
		if c := strings.Compare(SortKey(a, markers...), SortKey(b, markers...)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return out
}

// Ahead returns, in queue order, the children that sort before ours, then
// ours: all a Driver needs, since no recipe's decision depends on who queued
// later. It scans once and sorts only the nodes ahead, so a deep queue costs
// a linear pass per look rather than a full sort. ok is false if ours is not
// among children.
func Ahead(children []string, ours string, markers ...string) (ahead []string, ok bool) {
	key := SortKey(ours, markers...)
	var before []keyed
	for _, c := range children {
		if c == ours {
			ok = true
			continue
		}
		if k := SortKey(c, markers...); k < key || (k == key && c < ours) {
			before = append(before, newKeyed(c, k))
		}
	}
	if !ok {
		return nil, false
	}
	slices.SortFunc(before, keyed.compare)
	ahead = make([]string, 0, len(before)+1)
	for _, k := range before {
		ahead = append(ahead, k.name)
	}
	return append(ahead, ours), true
}

// keyed is a child with its sort key. ZooKeeper's sequence suffixes are ten
// digits: two such keys compare as their numbers do, which is several
// times quicker than comparing the strings, and a deep queue is sorted on
// every look. Other keys compare as strings, so the order is Sort's.
type keyed struct {
	name, key string
	seq       int64 // the key as a number, or -1 if it is not ten digits
}

func newKeyed(name, key string) keyed {
	k := keyed{name: name, key: key, seq: -1}
	if len(k.key) == 10 {
		var n int64
		for i := range 10 {
			d := k.key[i] - '0'
			if d > 9 {
				return k
			}
			n = n*10 + int64(d)
		}
		k.seq = n
	}
	return k
}

func (a keyed) compare(b keyed) int {
	if a.seq >= 0 && b.seq >= 0 {
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
	} else if c := strings.Compare(a.key, b.key); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// Enter queues a contender and waits until its driver says it holds, ctx
// ends, or the client closes. If its session is lost while it waits, it
// queues again with a new node (the old one went with the session). Whatever
// fails after our node may exist deletes it, guaranteed.
func Enter(ctx context.Context, r Request) (*hold.Grant, error) {
	if len(r.Markers) == 0 {
		r.Markers = []string{r.Name}
	}
	for {
		e, err := enterOnce(ctx, r)
		if errors.Is(err, errSessionLost) && ctx.Err() == nil && !r.Client.Closed() && !r.NoWait {
			r.Client.Logger().Info("zookeeper session lost while queued; queueing again", "path", r.Dir)
			continue
		}
		return e, err
	}
}

func enterOnce(ctx context.Context, r Request) (*hold.Grant, error) {
	c := r.Client
	if err := ctx.Err(); err != nil {
		return nil, err // nothing sent for a wait that is already over
	}
	if _, err := c.WaitConnected(ctx); err != nil {
		return nil, err
	}
	q, err := c.Enqueue(ctx, framework.Join(r.Dir, r.Name), r.Data)
	if err != nil {
		return nil, err
	}
	if r.Queued != nil {
		r.Queued(q.Path)
	}
	w := &waiter{r: r, ctx: ctx, path: q.Path, name: framework.Base(q.Path), owner: q.Owner, czxid: q.Czxid, changed: q.Changed}
	// The listing is not kept while we wait: in a queue of N it is N names,
	// so N waiters keeping theirs would hold N² of them.
	kids := q.Children
	q = nil
	e, err := w.run(kids)
	if err != nil {
		// Ours to clean up whatever happened: a cancelled wait, an error, a
		// lost session (then the owner check makes this a no-op).
		if derr := Leave(c, w.path, w.owner); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	return e, nil
}

type waiter struct {
	r     Request
	ctx   context.Context
	path  string
	name  string
	owner int64 // session that created our node (0 until known)
	czxid int64
	// changed is the enqueue listing's child watch, kept only until the
	// first look: a grant from that listing hands it on (hold.Grant.Changed).
	changed <-chan zk.Event
}

func (w *waiter) run(kids []string) (*hold.Grant, error) {
	c := w.r.Client
	if w.owner != c.Session().ID {
		// Made by a session that has since been replaced.
		return nil, fmt.Errorf("%w: node %s belongs to an old session", errSessionLost, w.path)
	}
	for {
		d, watch, ok := w.look(kids)
		if !ok {
			return nil, fmt.Errorf("%w: node %s is gone", errSessionLost, w.path)
		}
		if d.Holds {
			return w.grant()
		}
		if w.r.NoWait {
			return nil, zkrecipes.ErrWouldBlock
		}
		kids, w.changed = nil, nil // see enterOnce
		granted, err := w.wait(framework.Join(w.r.Dir, watch), d.OnlyObstacle)
		if err != nil {
			return nil, err
		}
		if granted {
			return w.grant()
		}
		if kids, _, err = c.Children(w.ctx, w.r.Dir); err != nil {
			return nil, err
		}
	}
}

// look is the driver's decision on kids, and the name of the node to watch.
func (w *waiter) look(kids []string) (Decision, string, bool) {
	if f, ok := w.r.Driver.(first); ok {
		return f.look(kids, w.name, w.r.Markers)
	}
	sorted, ok := Ahead(kids, w.name, w.r.Markers...)
	if !ok {
		return Decision{}, "", false
	}
	d := w.r.Driver.Decide(sorted, len(sorted)-1)
	if d.Holds {
		return d, "", true
	}
	return d, sorted[d.Watch], true
}

// wait sets a watch on path (a data watch, as Curator: none is left behind if
// the node is already gone) and waits for it. granted is true when the node
// is gone and it was our only obstacle.
func (w *waiter) wait(path string, onlyObstacle bool) (granted bool, err error) {
	c := w.r.Client
	// The raw watch: a waiter costs no goroutine of its own beyond its
	// caller's, however many wait (ctx and the client's closing are
	// selected on below).
	ch, st, err := c.WatchData(w.ctx, path)
	// The session is read after the watch is set: if GetW was retried
	// across a session change, the watch is fine but our node is gone, and
	// waiting on the new session's Lost channel would wait in vain until
	// the watched node changes.
	s := c.Session()
	if s.ID != w.owner {
		return false, fmt.Errorf("%w: node %s belongs to an old session", errSessionLost, w.path)
	}
	if errors.Is(err, zk.ErrNoNode) {
		return onlyObstacle, nil
	}
	if err != nil {
		return false, err
	}
	lost := s.Lost
	select {
	case ev := <-ch:
		if ev.Type == zk.EventNodeDeleted {
			return onlyObstacle || w.afterHead(path, st), nil
		}
		if err := WatchEnded(w.ctx, path, ev); err != nil {
			return false, err
		}
		return false, nil // data changed (a revocation request): look again
	case <-lost:
		return false, fmt.Errorf("%w: while waiting on %s", errSessionLost, path)
	case <-w.ctx.Done():
		return false, w.ctx.Err()
	case <-c.Done():
		return false, fmt.Errorf("watch on %s ended: %w", path, zkrecipes.ErrClosed)
	}
}

// WatchEnded says why a watch on path ended without an event, or nil if ev
// is an event: ctx's end, the session's expiry (errSessionLost), or the
// client's closing. Every wait of every recipe reads its watch with it.
func WatchEnded(ctx context.Context, path string, ev zk.Event) error {
	switch {
	case ev.Type != zk.EventNotWatching:
		return nil
	case ctx.Err() != nil:
		return ctx.Err() // the watch ended with our wait
	case errors.Is(ev.Err, zk.ErrSessionExpired):
		return fmt.Errorf("%w: %v", errSessionLost, ev.Err)
	}
	return fmt.Errorf("watch on %s ended: %w", path, errors.Join(ev.Err, zkrecipes.ErrClosed))
}

// afterHead says whether the node at path, now deleted, was granted by this
// client with nothing ahead of it: nothing can be ahead of it any more, so
// for First, which watches the f-th node ahead, the f-1 between it and us
// leave us holding. Without it, each handoff in a deep queue listed the
// whole queue again.
func (w *waiter) afterHead(path string, st *zk.Stat) bool {
	_, ok := w.r.Driver.(first)
	return ok && st != nil && headsOf(w.r.Client).Was(path, st.Czxid)
}

// grant hands out the hold only under a session that Trust vouches for.
func (w *waiter) grant() (*hold.Grant, error) {
	s, err := Trust(w.ctx, w.r.Client, w.owner, w.path)
	if err != nil {
		return nil, err
	}
	// A First(1) grant has nothing ahead, whichever way it came: see
	// afterHead.
	if f, ok := w.r.Driver.(first); ok && f == 1 {
		headsOf(w.r.Client).Note(w.path, w.czxid)
	}
	e := &hold.Grant{Path: w.path, Token: w.czxid, Session: s}
	select {
	case <-w.changed: // nil: blocks
	default:
		e.Changed = w.changed
	}
	return e, nil
}

// Trust returns the session under which nodes made by session owner can be
// handed out as held: the current session, if it is owner and the client's
// error policy still trusts it. A link that dropped just now is waited out,
// and every node checked again after the reconnect (it must exist and still
// be owner's). Every recipe grants through this, so that no hold is ever
// born under a session in doubt. The error wraps errSessionLost when the
// nodes cannot be trusted any more.
func Trust(ctx context.Context, c *framework.Client, owner int64, paths ...string) (conn.Session, error) {
	for {
		s := c.Session()
		if s.ID != owner {
			return s, fmt.Errorf("%w: %v belong to session 0x%x, now on 0x%x", errSessionLost, paths, owner, s.ID)
		}
		// Lost first: a lost session has its loss signal closed too, and a
		// select would pick either, sometimes waiting for a reconnect
		// before saying what it knows now.
		select {
		case <-s.Lost:
			return s, fmt.Errorf("%w: at grant", errSessionLost)
		default:
		}
		select {
		case <-c.LossSignal(s):
			if err := reconnected(ctx, c, paths); err != nil {
				return s, err
			}
			continue
		default:
		}
		if err := c.CheckTrust(s); err != nil {
			if errors.Is(err, zkrecipes.ErrClosed) {
				return s, err
			}
			// No proof of life for longer than the signal allows, the
			// signal not fired yet: a process thawed after a long freeze,
			// whose connection has not yet found its link dead. It will
			// at once (its read deadline is past): wait for that, then
			// look again as above.
			t := time.NewTimer(s.Timeout)
			select {
			case <-s.Suspended:
				t.Stop()
				if err := reconnected(ctx, c, paths); err != nil {
					return s, err
				}
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return s, ctx.Err()
			}
			continue
		}
		return s, nil
	}
}

// reconnected waits for the link to be back and checks that every node of
// paths is still there and the current session's.
func reconnected(ctx context.Context, c *framework.Client, paths []string) error {
	if _, err := c.WaitConnected(ctx); err != nil {
		return err
	}
	for _, p := range paths {
		ok, st, err := c.Exists(ctx, p)
		if err != nil {
			return err
		}
		if !ok || st.EphemeralOwner != c.Session().ID {
			return fmt.Errorf("%w: node %s gone after reconnect", errSessionLost, p)
		}
	}
	return nil
}

// Leave deletes a queue node that session owner made: the one way every
// recipe leaves a queue, whether it gave up, failed or released. While
// owner is the current session and the link is up, the delete is only sent
// (framework.Client.DeleteOwned): ZooKeeper applies it before anything this
// client sends next, so a retry never queues behind its own old node, and
// the next contender is woken by the delete itself. Otherwise the node may
// belong to a session being replaced and is deleted in the background,
// only while it is still owner's. It returns an error only when the delete
// could not even be queued; a closed client's session takes its ephemeral
// nodes with it. The wait is bounded by framework.WithReleaseTimeout.
func Leave(c *framework.Client, path string, owner int64) error {
	err := c.DeleteOwned(context.Background(), path, owner)
	if err == nil || errors.Is(err, zkrecipes.ErrClosed) || errors.Is(err, zkrecipes.ErrDeferred) {
		return nil
	}
	return err
}

// Nodes lists the queue under dir in Curator's order, as full paths: the
// one participant listing of every recipe. A missing dir is an empty queue.
func Nodes(ctx context.Context, c *framework.Client, dir string, markers ...string) ([]string, error) {
	kids, _, err := c.Children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, Err(err, false)
	}
	sorted := Sort(kids, markers...)
	for i, k := range sorted {
		sorted[i] = framework.Join(dir, k)
	}
	return sorted, nil
}

// Participants returns the data of the queue's nodes (the participant ids)
// in queue order; a node that leaves while we look is skipped.
func Participants(ctx context.Context, c *framework.Client, dir string, markers ...string) ([]string, error) {
	nodes, err := Nodes(ctx, c, dir, markers...)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		data, _, err := c.Get(ctx, n)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, Err(err, false)
		}
		ids = append(ids, string(data))
	}
	return slices.Clip(ids), nil
}

// CheckCall says why a call with client and ctx cannot be made: a nil
// client or context. Nothing is sent then.
func CheckCall(client *framework.Client, ctx context.Context) error {
	switch {
	case client == nil:
		return fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", zkrecipes.ErrInvalidArgument)
	}
	return nil
}

// CheckData says why data cannot be the data of a recipe's queue nodes in
// dir (named each of names, then a sequence number): their create would be
// over the client's request size limit (zkrecipes.ErrTooLarge). A recipe
// checks its participant id with it when it is made, so that nothing it
// sends later is refused for it.
func CheckData(c *framework.Client, dir string, data []byte, names ...string) error {
	for _, name := range names {
		err := c.CheckCreate(framework.Join(dir, name), data, framework.WithMode(framework.EphemeralSequential), framework.Protected())
		if err != nil {
			return fmt.Errorf("participant id of %d bytes: %w", len(data), err)
		}
	}
	return nil
}
