// Package engine is the queue every lock-like recipe of this module stands
// on, as Curator's LockInternals and LockInternalsDriver are, and a recipe
// of your own can stand on it the same way. Contenders queue as
// ephemeral-sequential nodes in one directory, made with Curator's protected
// names (a create whose reply is lost is found again by listing the
// directory, never left behind); a small Driver decides from the sorted
// queue whether a contender holds and, if not, which single node it waits
// on, so that one release wakes one waiter.
//
// The mutex (the first holds: First(1)), the read lock (no writer before
// me), the semaphore's internal lock and the leader selector are Drivers
// over this loop. Enter runs it and returns a Grant; Follow turns the
// grant into a Node, whose holds' loss signal fires when the node can no
// longer be trusted. Package reentrant makes the queue reentrant per goroutine,
// and package lease is Curator's semaphore (InterProcessSemaphoreV2).
//
// Nodes are ordered by SortKey, the part of a name after the last of the
// recipe's markers (Curator's fixForSorting), so that recipes sharing a
// directory with Curator see the same queue.
//
// Beyond Curator, the loop saves a round trip per handoff: when the node a
// contender waits on was the only one in its way in the last sorted
// snapshot (Decision.OnlyObstacle), that node's deletion grants at once,
// without listing the queue again. This is safe because a newer node always
// gets a higher sequence number: nothing can appear ahead of us. A driver
// where something can (the read-write lock's downgrade) never sets
// OnlyObstacle. A deep queue of one process goes further: a client
// remembers the nodes First granted with nothing ahead, so that when such a
// node goes, the waiter behind it holds without listing the queue.
//
// # A recipe of your own
//
// A hold is the recipe author's to make, and the holder's only to use:
// package hold shows holders a *hold.Hold and nothing of how it is made.
// This package is the author's half. Once a recipe has decided that an
// ephemeral node of its client's current session is granted (Enter, or a
// look of its own at framework.Client.Enqueue's queue), it describes the
// node as a Grant and Follow turns it into a Node, which follows the
// session's loss signal and the node itself from the first look at its
// end (deleted or re-owned means lost; WithRevocable also follows Curator's revocation requests;
// WithRecipe names the recipe in every error; WithMetrics counts its holds
// in the recipes' instruments; WithWatcher has a Watcher shared by many
// Nodes follow it, so that a process holding a thousand of them keeps no
// goroutine per Node). Each acquisition of the Node is a
// *hold.Hold (Node.NewHold, that is hold.New with the Node as its
// hold.Source), whose release callback is the recipe's bookkeeping; the
// callback of the last one releases the Node, which deletes the node
// (Node.Release). A Node never hands out a Hold once its signal has fired.
// Node.Lease bounds its holds in time (a recipe's WithLeaseTime), and
// Node.OnExpire tells the recipe when the lease ended them; Node.Forget
// stops following a node the recipe goes on managing itself (a leader
// latch's). A release callback that returns hold.ErrReleasedByClose (alone
// or joined with the node's own error) says the recipe's Close gave the
// hold back: the holder's Release, and Fenced, then say so.
//
//	g, err := engine.Enter(ctx, engine.Request{Client: c, Dir: dir, Name: "slot-", Driver: drv})
//	if err != nil {
//		return nil, err
//	}
//	node := engine.Follow(c, *g, engine.WithRecipe("slots", dir))
//	h, err := node.NewHold(func(*hold.Hold) error { return node.Release() })
//	if err != nil { // lost between the grant and now: the node is ours to delete
//		return nil, errors.Join(err, node.Release())
//	}
//	return h, nil
package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// errSessionLost is returned when the session our node belonged to is gone
// while we waited; the node went with it (or is being deleted). Enter
// queues again on it; should it reach a caller, it matches
// zkrecipes.ErrSessionLost.
var errSessionLost = fmt.Errorf("%w (while queued)", zkrecipes.ErrSessionLost)

// Decision is a Driver's verdict on one sorted snapshot of the queue.
type Decision struct {
	// Holds says our node holds now.
	Holds bool
	// Watch is the index, in the snapshot, of the node to wait on when we
	// do not hold: one of the nodes ahead of ours (0 <= Watch < ours).
	// When it goes, the queue is listed and the driver asked again.
	Watch int
	// OnlyObstacle says that node is the only one keeping us from
	// holding, so that its deletion grants without listing the queue
	// again. Set it only if no node can ever queue ahead of ours later
	// (true when the order is the sequence number's).
	OnlyObstacle bool
}

// Driver decides ownership, as Curator's LockInternalsDriver. Decide is
// given the names (not paths) of the nodes ahead of ours in queue order,
// then ours, at index ours (see Ahead: no decision depends on who queued
// later). It is called on Enter's goroutine for every look at the queue,
// and must be quick and must not block. A Watch outside the nodes ahead
// ends Enter with zkrecipes.ErrInvalidArgument.
type Driver interface {
	Decide(sorted []string, ours int) Decision
}

// DriverFunc adapts a function to Driver.
type DriverFunc func(sorted []string, ours int) Decision

// Decide calls f.
func (f DriverFunc) Decide(sorted []string, ours int) Decision { return f(sorted, ours) }

// First is the driver of the mutex (First(1)) and of a semaphore of
// maxHolders: the first maxHolders nodes hold; every other node waits on
// the one maxHolders places ahead of it, so that one release wakes one
// waiter. A maxHolders below one is taken as one: nobody holding is no
// lock. Enter recognises it and decides without sorting the queue.
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

// Request describes one contender: where it queues, under what name, and
// the driver that decides when it holds.
type Request struct {
	// Client is the client the node is made through; its session owns it.
	Client *framework.Client
	// Dir is the queue's directory; it is created (as containers) if needed.
	Dir string
	// Name is the node name before the sequence number, e.g. "lock-"; the
	// node is made with Curator's protected prefix before it.
	Name string
	// Markers are the strings after whose last occurrence a name's sort key
	// begins (Curator's fixForSorting); default: Name.
	Markers []string
	// Data is the node's data: the participant id (see CheckData).
	Data []byte
	// Driver decides, from the sorted queue, whether the node holds.
	Driver Driver
	// NoWait gives up at once, deleting our node, if we do not hold.
	NoWait bool
	// Queued, if not nil, is called with our node each time it is in the
	// queue (again, after a lost session): a recipe's Start returns then.
	Queued func(path string)
}

// Enter queues a contender and waits until its driver says it holds, ctx
// ends, or the client closes; the grant is handed out only under a session
// Trust vouches for. Follow makes it into holds. If its session is lost while it waits, it
// queues again with a new node (the old one went with the session). Whatever
// fails after our node may exist deletes it, guaranteed.
func Enter(ctx context.Context, r Request) (*Grant, error) {
	switch {
	case ctx == nil:
		return nil, zkrecipes.ErrNilContext
	case r.Client == nil || r.Driver == nil || r.Name == "":
		return nil, fmt.Errorf("%w: a Request needs a Client, a Driver and a Name", zkrecipes.ErrInvalidArgument)
	}
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

func enterOnce(ctx context.Context, r Request) (*Grant, error) {
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
	// first look: a grant from that listing hands it on (Grant.Changed).
	changed <-chan zk.Event
}

func (w *waiter) run(kids []string) (*Grant, error) {
	c := w.r.Client
	if w.owner != c.Session().ID {
		// Made by a session that has since been replaced.
		return nil, fmt.Errorf("%w: node %s belongs to an old session", errSessionLost, w.path)
	}
	for {
		d, watch, err := w.look(kids)
		if err != nil {
			return nil, err
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

// gone is look's error when our node is not among the children: made only
// then, not on every look.
func (w *waiter) gone() error {
	return fmt.Errorf("%w: node %s is gone", errSessionLost, w.path)
}

// look is the driver's decision on kids, and the name of the node to watch.
func (w *waiter) look(kids []string) (Decision, string, error) {
	if f, ok := w.r.Driver.(first); ok {
		d, watch, ok := f.look(kids, w.name, w.r.Markers)
		if !ok {
			return d, "", w.gone()
		}
		return d, watch, nil
	}
	sorted, ok := Ahead(kids, w.name, w.r.Markers...)
	if !ok {
		return Decision{}, "", w.gone()
	}
	d := w.r.Driver.Decide(sorted, len(sorted)-1)
	if d.Holds {
		return d, "", nil
	}
	// A driver of a user's own is checked: waiting on ourselves, or on
	// nothing, would never end.
	if d.Watch < 0 || d.Watch >= len(sorted)-1 {
		return d, "", fmt.Errorf("%w: driver chose to watch index %d of the %d nodes ahead of %s",
			zkrecipes.ErrInvalidArgument, d.Watch, len(sorted)-1, w.path)
	}
	return d, sorted[d.Watch], nil
}

// wait sets a watch on path (a data watch, as Curator: none is left behind if
// the node is already gone) and waits for it. granted is true when the node
// is gone and it was our only obstacle.
func (w *waiter) wait(path string, onlyObstacle bool) (granted bool, err error) {
	c := w.r.Client
	// The watch costs a waiter no goroutine of its own beyond its caller's,
	// however many wait (without a namespace; see framework.Client.GetW):
	// ctx and the client's closing are selected on below.
	_, st, ch, err := c.GetW(w.ctx, path)
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
	return ok && st != nil && headsOf(w.r.Client).was(path, st.Czxid)
}

// grant hands out the hold only under a session that Trust vouches for.
func (w *waiter) grant() (*Grant, error) {
	s, err := Trust(w.ctx, w.r.Client, w.owner, w.path)
	if err != nil {
		return nil, err
	}
	// A First(1) grant has nothing ahead, whichever way it came: see
	// afterHead.
	if f, ok := w.r.Driver.(first); ok && f == 1 {
		headsOf(w.r.Client).note(w.path, w.czxid)
	}
	e := &Grant{Path: w.path, Token: w.czxid, Session: s}
	select {
	case <-w.changed: // nil: blocks
	default:
		e.Changed = w.changed
	}
	return e, nil
}
