package framework

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes"
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
	// again, before the watch was set. Nobody needs to read it.
	Changed <-chan zk.Event
}

// Enqueue joins a queue: it makes a protected ephemeral-sequential node at
// path (path's last segment is the name before the sequence number, as
// "lock-"; missing parents are made as containers) with data, and lists
// its parent, in about one round trip instead of the three that a create,
// a list and an exists would take. It is what every lock-like recipe of
// this module queues with; the node is the caller's to delete (DeleteOwned
// with Queued.Owner), whatever happens next.
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
	// One value for what the send loop hands back: three variables
	// captured by the closure were three allocations.
	join := &struct {
		done chan struct{}
		mine *listing
		err  error
	}{done: make(chan struct{})}
	trace := c.conn.TraceCreate(c.ns.fix(prefix), func() {
		join.mine, join.err = c.joinListing(parent)
		close(join.done)
	})
	defer trace.Close()

	type listed struct {
		kids    []string
		pzxid   int64
		changed <-chan zk.Event
		err     error
	}
	before := c.conn.Session()
	var res struct {
		path string
		err  error
	}
	res.path, res.err = c.Create(ctx, path, data, WithMode(EphemeralSequential), WithParentContainers(), withProtectedID(id, sent))
	var l listed
	select {
	case <-join.done:
		// The create went out with a listing behind it. (A create answered
		// has been written, and the listing joined before it was.)
		switch {
		case res.err != nil: // nothing to list for
		case join.err == nil:
			l.kids, l.pzxid, l.changed, l.err = join.mine.wait(ctx)
		default:
			l.err = join.err
		}
	default:
		l.err = errNotListed // failed before it was written, or ctx ended
	}
	if res.err != nil {
		return nil, res.err
	}
	q := &Queued{Path: res.path}
	name := Base(res.path)
	var pzxid int64
	if l.err == nil && slices.Contains(l.kids, name) {
		q.Children, pzxid, q.Changed = l.kids, l.pzxid, l.changed
	} else {
		// The list went out before the create that succeeded (a retry).
		kids, pz, changed, err := c.listAfter(ctx, parent)
		if err != nil {
			return nil, c.enqueueFailed(q.Path, err)
		}
		q.Children, pzxid, q.Changed = kids, pz, changed
	}
	if p, zxid, session, ok := trace.Result(); ok && c.ns.unfix(p) == q.Path && session == before.ID {
		q.Czxid, q.Owner = zxid, session
	} else {
		ok, st, err := c.Exists(ctx, q.Path)
		switch {
		case err != nil:
			return nil, c.enqueueFailed(q.Path, err)
		case !ok:
			return nil, c.enqueueFailed(q.Path, fmt.Errorf("%w: %s vanished after its create", zk.ErrNoNode, q.Path))
		}
		q.Czxid, q.Owner = st.Czxid, st.EphemeralOwner
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

// errNotListed: the create was answered before it was seen on the wire
// (a retry), so no listing was pipelined behind it.
var errNotListed = errors.New("no pipelined listing")

// enqueueFailed cleans up a node Enqueue made but cannot hand over.
func (c *Client) enqueueFailed(path string, err error) error {
	if derr := c.DeleteLater(path, 0); derr != nil && !errors.Is(derr, zkrecipes.ErrClosed) {
		return errors.Join(err, derr)
	}
	return err
}
