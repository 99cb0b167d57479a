package framework

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/session"
)

// Queued is a node made by Enqueue.
type Queued struct {
	// Path is the new node, without the namespace.
	Path string
	// Czxid is the zxid that created it: a fencing token.
	Czxid int64
	// Owner is the session that created it.
	Owner int64
	// Children of the parent, listed after the create: they include Path.
	Children []string
	// Changed, if not nil, is the listing's child watch: it fires (or is
	// closed) at the first change of the parent's children after the
	// listing, Path's deletion included. It is nil unless Path's create was
	// the last change to the parent's children before the listing (its
	// pzxid is Czxid), so that Path was not deleted, or deleted and made
	// again, before the watch was set. Nobody needs to read it; only its
	// firing means anything (its event's Path has the client's namespace),
	// and a waiter selects on its own ctx beside it, as for GetW.
	Changed <-chan zk.Event
}

// Enqueue joins a queue: it makes a protected ephemeral-sequential node at
// path (path's last segment is the name before the sequence number, as
// "lock-"; missing parents are made as containers) with data, and lists
// its parent, in about one round trip instead of the three that a create,
// a list and an exists would take. It is what every lock-like recipe of
// this module queues with; the node is the caller's to delete (Delete
// with OwnedBy(Queued.Owner)), whatever happens next.
//
// ZooKeeper answers one session's requests in the order they were sent, so
// a listing sent right behind the create sees the new node, and the
// create's own reply carries its zxid, which is the node's czxid. If
// anything gets in the way (a retried create, a new session), Enqueue asks
// instead. Listings of one directory by concurrent callers are shared: a
// process whose goroutines queue by the thousand on one lock sends one
// listing per round trip, not one per caller.
//
// If it fails after the node may exist, the node is deleted in the
// background: nothing is left behind.
func (c *Client) Enqueue(ctx context.Context, path string, data []byte) (*Queued, error) {
	if err := c.check(ctx, "create", path, true); err != nil {
		return nil, err
	}
	id := newProtectedID()
	parent := Parent(path)
	sent := protectedPath(path, id)
	prefix := sent[:len(sent)-len(Base(path))]
	// The listing is sent from the connection's send loop, the moment the
	// create is about to be written (so it is answered after the create),
	// and the create runs on the caller's goroutine: no goroutine of its
	// own to wait for the create's "sent" while it is made.
	join := &pipelined{}
	trace := c.conn.TraceCreate(c.ns.fix(prefix), func() {
		join.mine, join.err = c.joinListing(parent)
	})
	join.done = trace.Sent() // closed right after the func above ran
	defer trace.Close()

	before := c.conn.Session()
	created, err := c.Create(ctx, path, data, WithMode(EphemeralSequential), WithParentContainers(), withProtectedID(id, sent))
	l := join.listed(ctx, err)
	if err != nil {
		return nil, err
	}
	q := &Queued{Path: created}
	pzxid, err := c.enqueuedChildren(ctx, q, parent, l)
	if err == nil {
		err = c.enqueuedOwner(ctx, q, trace, before.ID)
	}
	if err != nil {
		return nil, c.enqueueFailed(q.Path, err)
	}
	// The listing's watch stands for a watch on our node only if nothing
	// changed the directory between our create and the listing: a node
	// deleted and made again at our path in between shows our name, and
	// the watch, set after, would never tell.
	if pzxid != q.Czxid {
		q.Changed = nil
	}
	return q, nil
}

// pipelined is what the send loop hands back to Enqueue: the listing it
// joined behind the create. One value: three variables captured by the
// closure were three allocations.
type pipelined struct {
	done <-chan struct{} // the trace's Sent: the create went out, listing joined
	mine *listing
	err  error
}

// listed is a listing of the parent as Enqueue takes it.
type listed struct {
	kids    []string
	pzxid   int64
	changed <-chan zk.Event
	err     error
}

// listed returns the listing sent behind the create, whose error was
// createErr, once it is answered.
func (p *pipelined) listed(ctx context.Context, createErr error) listed {
	var l listed
	select {
	case <-p.done:
		// The create went out with a listing behind it. (A create answered
		// has been written, and the listing joined before it was.)
		switch {
		case createErr != nil: // nothing to list for
		case p.err == nil:
			l.kids, l.pzxid, l.changed, l.err = p.mine.wait(ctx)
		default:
			l.err = p.err
		}
	default:
		l.err = errNotListed // failed before it was written, or ctx ended
	}
	return l
}

// enqueuedChildren sets q's Children and Changed from l, the listing sent
// behind q's create, or from a new one if l does not show q (it went out
// before the create that succeeded: a retry), and returns its pzxid.
func (c *Client) enqueuedChildren(ctx context.Context, q *Queued, parent string, l listed) (int64, error) {
	if l.err == nil && slices.Contains(l.kids, Base(q.Path)) {
		q.Children, q.Changed = l.kids, l.changed
		return l.pzxid, nil
	}
	kids, pzxid, changed, err := c.listAfter(ctx, parent)
	if err != nil {
		return 0, err
	}
	q.Children, q.Changed = kids, changed
	return pzxid, nil
}

// enqueuedOwner sets q's Czxid and Owner from the create's reply if trace
// saw it on the session sessionID, else by asking.
func (c *Client) enqueuedOwner(ctx context.Context, q *Queued, trace *session.Trace, sessionID int64) error {
	if p, zxid, s, ok := trace.Result(); ok && c.ns.unfix(p) == q.Path && s == sessionID {
		q.Czxid, q.Owner = zxid, s
		return nil
	}
	ok, st, err := c.Exists(ctx, q.Path)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w: %s vanished after its create", zk.ErrNoNode, q.Path)
	}
	q.Czxid, q.Owner = st.Czxid, st.EphemeralOwner
	return nil
}

// errNotListed: the create was answered before it was seen on the wire
// (a retry), so no listing was pipelined behind it.
var errNotListed = errors.New("no pipelined listing")

// enqueueFailed cleans up a node Enqueue made but cannot hand over.
func (c *Client) enqueueFailed(path string, err error) error {
	if derr := c.Delete(c.life, path, -1, Deferred()); derr != nil && !errors.Is(derr, zkrecipes.ErrClosed) {
		return errors.Join(err, derr)
	}
	return err
}
