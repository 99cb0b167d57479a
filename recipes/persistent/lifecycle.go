package persistent

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// keeper is the stop of a running keeper: a Start that fails ends it, and
// waits for it, before it deletes what it made (Close's Runtime ends it
// with the rest of the Node's background work).
type keeper struct {
	stop context.CancelFunc
	done <-chan struct{} // closed when it has returned
}

// Start makes the node (and its missing parents, as containers) and keeps
// it in place until Close. It returns once the node is in place, or with
// ctx's error, leaving nothing behind (Start may then be called again). An
// ephemeral node of another session at the path is waited for: it is never
// taken over. A second Start after one succeeded fails with
// zkrecipes.ErrStarted.
func (n *Node) Start(ctx context.Context) error {
	if err := n.usable(); err != nil {
		return err
	}
	return n.rt.Start(ctx, n.begin)
}

// begin starts the keeper and waits until the node is in place; if that
// fails, it undoes what it did.
func (n *Node) begin(ctx context.Context) error {
	if err := n.keep(ctx); err != nil {
		return err
	}
	if err := n.wait(ctx, 0); err != nil {
		n.undo()
		return err
	}
	return nil
}

// keep starts the keeper (run) as the Node's background work, once the
// last stop's delete is on its way.
func (n *Node) keep(ctx context.Context) error {
	n.mu.Lock()
	leaving := n.leaving
	n.mu.Unlock()
	if leaving != nil {
		select {
		case <-leaving:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	quit, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	n.mu.Lock()
	n.keeping = true
	n.keeper = keeper{stop: stop, done: done}
	n.setStatusLocked(Status{Err: fmt.Errorf("%w: being made", ErrNotInPlace)}, conn.Session{})
	n.mu.Unlock()
	sub := n.client.Subscribe()
	ok := n.rt.Go(func(life context.Context) {
		defer close(done)
		life, cancel := context.WithCancel(life)
		defer cancel()
		defer context.AfterFunc(quit, cancel)()
		n.run(life, sub)
		// A Wait or Set under way looks again: at Close, it is over.
		n.mu.Lock()
		n.wakeLocked()
		n.mu.Unlock()
	})
	if !ok {
		sub.Close()
		close(done)
		n.undo()
		return zkrecipes.ErrClosed
	}
	return nil
}

// undo ends the keeper and deletes the node it made, for a Start that
// failed: nothing is left behind, and the Node forgets the node's name
// (the next Start makes it anew).
func (n *Node) undo() {
	n.mu.Lock()
	k := n.keeper
	n.keeper = keeper{}
	n.mu.Unlock()
	if k.stop != nil {
		k.stop()
		<-k.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.client.ReleaseTimeout())
	defer cancel()
	n.stop(ctx, true)
	n.mu.Lock()
	n.keeping = false
	n.setStatusLocked(Status{Err: fmt.Errorf("%w: %w", ErrNotInPlace, zkrecipes.ErrNotStarted)}, conn.Session{})
	n.mu.Unlock()
}

// Close stops keeping the node and deletes it (of any kind, as Curator's
// close), guaranteed: an ephemeral node only while it is still the one
// this Node's session made. It ends a Start in progress with
// zkrecipes.ErrClosed, and every subscription (each delivers what it had
// queued, then its channel is closed). The client is not closed. It is
// idempotent and returns nil.
func (n *Node) Close() error {
	if err := n.usable(); err != nil {
		return err
	}
	return n.rt.Close(n.release)
}

// release is Close's, once the keeper has ended: it deletes the node (see
// stop), waiting for that until ctx ends, then says the Node is closed.
func (n *Node) release(ctx context.Context) error {
	n.stop(ctx, false)
	n.mu.Lock()
	if n.keeper.stop != nil {
		n.keeper.stop()
	}
	n.keeper = keeper{}
	n.setStatusLocked(Status{Path: n.actual, Err: fmt.Errorf("%w: %w", ErrNotInPlace, zkrecipes.ErrClosed)}, conn.Session{})
	n.mu.Unlock()
	n.feed.End(nil)
	return nil
}

// stop deletes the node (unless it is a TTLNode's container), once the
// keeper has ended: what Close and a failed Start share. It deletes only
// a node that is this Node's: one it made, or may have made (a create in
// doubt, settled by looking once the create is out of the client), never
// another session's ephemeral. It waits for that until ctx ends (the
// client's release timeout), whatever the link does: the rest goes on on
// one of the client's workers, and a new Start waits for it. forget: the
// Node forgets the node's name too (a failed Start: the next makes it
// anew).
func (n *Node) stop(ctx context.Context, forget bool) {
	c := n.client
	done := make(chan struct{})
	n.mu.Lock()
	n.leaving = done
	n.mu.Unlock()
	leave := func() {
		defer close(done)
		n.leave(forget)
	}
	if !c.Go(leave) {
		// The client is closing: its session, and every ephemeral node
		// of it, goes; its Close ends a create still on its way.
		leave()
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
		c.Logger().Debug("zookeeper persistent node: delete at close goes on in the background", "path", n.path)
	}
}

// leave deletes the node if it is this Node's, once every create of its
// is out of the client (one abandoned mid-flight may still land: what it
// did is known then, as it records its outcome itself).
func (n *Node) leave(forget bool) {
	n.creates.Wait()
	n.mu.Lock()
	actual, mine, doubt, owner := n.actual, n.mine, n.doubt, n.owner
	n.owner, n.written = 0, 0
	n.mine, n.doubt = false, false
	if forget {
		n.actual = ""
	}
	n.mu.Unlock()
	if actual == "" || n.keepOnExit || (!mine && !doubt) {
		return
	}
	c := n.client
	if c.Closed() {
		return // the session and its ephemerals are gone
	}
	// Half the release timeout for the look and the delete's send, so
	// that what is left over goes to the client's background deletes
	// (which Drain waits for) well before stop stops waiting.
	ctx, cancel := context.WithTimeout(context.Background(), c.ReleaseTimeout()/2)
	defer cancel()
	if err := n.deleteOurs(ctx, actual, owner); err != nil && !errors.Is(err, zkrecipes.ErrDeferred) {
		c.Logger().Debug("zookeeper persistent node: delete at close failed", "path", actual, "err", err)
	}
}

// deleteOurs deletes the node at path if it is this Node's: for an
// ephemeral Node, one of session owner or of the current session (only
// this Node makes its name in this client); for a persistent one, a node
// that is not another session's ephemeral.
func (n *Node) deleteOurs(ctx context.Context, path string, owner int64) error {
	c := n.client
	s := c.Session()
	var ok bool
	var st *zk.Stat
	err := zkrecipes.ErrSuspended
	if c.State().IsConnected() && !closedCh(s.Suspended) {
		// Bounded by ctx: a link that died silently must not hold Close
		// up.
		ok, st, err = c.Exists(ctx, path)
	}
	switch {
	case err != nil && n.ephemeral():
		if owner == 0 {
			return err
		}
		// Checked in the background: deleted only while it is owner's.
		return c.Delete(ctx, path, -1, framework.OwnedBy(owner), framework.Deferred())
	case err != nil:
		// No look over this link: the background delete goes on until
		// the node is gone (a persistent node outlives the session).
		return c.Delete(ctx, path, -1, framework.Deferred())
	case !ok:
		return nil
	case n.ephemeral():
		if st.EphemeralOwner == 0 || (st.EphemeralOwner != owner && st.EphemeralOwner != s.ID) {
			return nil
		}
		// Only the node of the session that made it: a node another
		// session has made at the name since is left alone.
		return c.Delete(ctx, path, -1, framework.OwnedBy(st.EphemeralOwner), framework.InBackground())
	case st.EphemeralOwner != 0:
		return nil // another session's ephemeral: never ours
	}
	// Deferred returns at once; the delete goes on in the background,
	// which Drain and the client's Close wait for.
	return c.Delete(ctx, path, -1, framework.Deferred())
}

func closedCh(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
