package barrier

import (
	"context"
	"errors"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Leave blocks until every member has left: it deletes this member's node
// in Curator's order and waits until the round is over, as the server
// says: its ready node is gone (the last member deletes it with its own
// node, in one multi). It fails with ErrNotEntered without a successful
// Enter, zkrecipes.ErrSessionLost when this member's session was lost since (its
// node is gone: it had stopped being a member, whatever it did
// meanwhile), zkrecipes.ErrNodeDeleted when someone else deleted the node, ctx's
// error when ctx ends first, zkrecipes.ErrClosed on Close. After any of these the
// member is not entered any more and its node is deleted. A nil ctx is an
// error wrapping zkrecipes.ErrInvalidArgument: nothing is sent, and the
// member stays entered.
func (d *DoubleBarrier) Leave(ctx context.Context) error {
	if err := d.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return d.rt.Err(zkrecipes.ErrNilContext)
	}
	return d.named(d.leaveCall(ctx))
}

func (d *DoubleBarrier) leaveCall(ctx context.Context) error {
	d.mu.Lock()
	switch {
	case d.rt.Closed():
		d.mu.Unlock()
		return zkrecipes.ErrClosed
	case d.state != entered:
		d.mu.Unlock()
		return ErrNotEntered
	}
	// Under mu, as in enterCall. A closed client ends the member as a
	// request failing on it would: it is not entered any more.
	wctx, cancel, err := d.rt.Within(ctx)
	if err != nil {
		d.dropLocked()
		d.mu.Unlock()
		return err
	}
	defer cancel()
	d.state = leaving
	name, round := d.name, d.round
	d.mu.Unlock()

	err = d.leave(wctx, name, round)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropLocked()
	return ended(ctx, d.closed, err)
}

func (d *DoubleBarrier) leave(ctx context.Context, name string, round int64) error {
	ours := true // our node should still be there
	pacer := d.rt.Pacer()
	for {
		// Known locally, this needs no request: a member that wakes from a
		// long pause past its deadline still learns why it is out.
		if ours && d.sessionGone() {
			return d.goneErr(name)
		}
		wctx, cancel := context.WithCancel(ctx)
		done, member, ready, err := d.leaveOnce(wctx, name, round, &ours)
		if err != nil && transient(err) {
			cancel()
			if err := d.sleep(ctx, pacer.Next(), nil); err != nil {
				return err
			}
			continue
		}
		if done || err != nil {
			cancel()
			return d.fail(ctx, err)
		}
		pacer.Reset()
		select {
		case <-member:
		case <-ready:
		case <-ctx.Done():
		}
		cancel()
		if err := stopped(ctx, d.closed()); err != nil {
			return err
		}
	}
}

// leaveOnce is one step of the leave, decided on a fresh look: done, or a
// wait on a member node and on the ready node (a closed channel: look
// again at once). round is the czxid of our round's ready node: while it
// stands, the round is on, and every member node that stands was there
// when it began or joined it (see join), or is an arrival that will join
// it or find it over; once it is gone (or another round's stands), the
// round is over, whatever nodes are left: those are the next round's.
//
// The order is Curator's: the lowest member waits for the highest to go,
// every other one deletes its own node and waits for the lowest. The last
// member, alone, deletes its node and the ready node in one multi, at the
// version it read, so the ready node goes exactly when the round's last
// member node does, and not if someone joined meanwhile.
func (d *DoubleBarrier) leaveOnce(ctx context.Context, name string, round int64, ours *bool) (done bool, member, ready <-chan zk.Event, err error) {
	exists, rst, ready, err := d.client.ExistsW(ctx, d.ready)
	if err != nil {
		return false, nil, nil, err
	}
	on := exists && rst.Czxid == round
	kids, _, err := d.client.Children(ctx, d.path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return false, nil, nil, err
	}
	ms := members(kids)
	i := slices.Index(ms, name)
	node := framework.Join(d.path, name)
	switch again, err := d.settle(ctx, name, i >= 0, *ours); {
	case err != nil:
		return false, nil, nil, err
	case again:
		return false, closedEvents, nil, nil
	}
	var watch string
	switch {
	case !on && *ours:
		// The round ended with our node still in it: its ready node was
		// deleted by no member of ours (a Curator member deletes it as it
		// leaves, or an operator did). Ours goes now; we are out.
		if err := d.client.Delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false, nil, nil, err
		}
		*ours = false
		d.clearName()
		return true, nil, nil, nil
	case !on:
		return true, nil, nil, nil
	case *ours && len(ms) == 1:
		return d.endRound(ctx, node, rst.Version, round, ours)
	case *ours && i == 0:
		watch = ms[len(ms)-1]
	case *ours:
		if err := d.deleteOurs(name); err != nil {
			return false, nil, nil, err
		}
		*ours = false
		watch = ms[0]
	case len(ms) == 0:
		return d.endAbandoned(ctx, rst)
	default:
		watch = ms[0]
	}
	return d.watchMember(ctx, watch, ready)
}

// settle squares our node with a listing that does (listed) or does not
// show it. While it is ours it must be there. Once we let it go, a listing
// that still shows it means our delete went on in the background and has
// not landed: our node must go before we may say we left, so it is
// deleted and the leave looks again (again); one that shows it gone drops
// it from the dropped.
func (d *DoubleBarrier) settle(ctx context.Context, name string, listed, ours bool) (again bool, err error) {
	switch {
	case ours && !listed:
		return false, d.goneErr(name)
	case !ours && listed:
		if err := d.client.Delete(ctx, framework.Join(d.path, name), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false, err
		}
		return true, nil
	case !ours:
		d.forget(name) // gone, as the listing shows
	}
	return false, nil
}

// endAbandoned ends a round whose member nodes are all gone while its
// ready node, rst, stands: the last member's session ended before it
// could end the round. It deletes the ready node at the version read, and
// at the directory's version read before (see epoch): a member that joins
// meanwhile bumps the one, a new round's ready node the other. Safe to
// resend for the same reasons.
func (d *DoubleBarrier) endAbandoned(ctx context.Context, rst *zk.Stat) (bool, <-chan zk.Event, <-chan zk.Event, error) {
	epoch, ok, err := d.epoch(ctx, rst)
	if err != nil {
		return false, nil, nil, err
	}
	if !ok {
		return false, closedEvents, nil, nil
	}
	_, err = d.client.Multi(ctx,
		&zk.CheckVersionRequest{Path: d.path, Version: epoch},
		&zk.DeleteRequest{Path: d.ready, Version: rst.Version})
	var me *framework.MultiOpError
	switch {
	case err == nil:
		return true, nil, nil, nil
	case errors.As(err, &me):
		return false, closedEvents, nil, nil
	}
	return false, nil, nil, err
}

// watchMember sets the leave's watch on the member node name, to wait on
// with the ready node's watch, ready; a node gone meanwhile is no wait:
// look again at once.
func (d *DoubleBarrier) watchMember(ctx context.Context, name string, ready <-chan zk.Event) (bool, <-chan zk.Event, <-chan zk.Event, error) {
	exists, _, member, err := d.client.ExistsW(ctx, framework.Join(d.path, name))
	if err != nil {
		return false, nil, nil, err
	}
	if !exists {
		return false, closedEvents, nil, nil // gone meanwhile: look again at once
	}
	return false, member, ready, nil
}

// endRound is the last member's step: its node and the ready node (at
// version, as read) go in one multi. The multi is safe to resend after a
// lost reply: its first op deletes our node, whose name is never used
// again, so a resend of an applied multi fails whole and touches nothing.
func (d *DoubleBarrier) endRound(ctx context.Context, node string, version int32, round int64, ours *bool) (bool, <-chan zk.Event, <-chan zk.Event, error) {
	_, err := d.client.Multi(ctx,
		&zk.DeleteRequest{Path: node, Version: -1},
		&zk.DeleteRequest{Path: d.ready, Version: version})
	var me *framework.MultiOpError
	switch {
	case err == nil:
		*ours = false
		d.clearName()
		return true, nil, nil, nil
	case errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, zk.ErrNoNode):
		// Our node is gone: with the ready node, if this is our own multi
		// resent after a lost reply; else it went another way.
		ok, st, rerr := d.client.Exists(ctx, d.ready)
		if rerr != nil {
			return false, nil, nil, rerr
		}
		if ok && st.Czxid == round {
			return false, nil, nil, d.goneErr(framework.Base(node))
		}
		*ours = false
		d.clearName()
		return true, nil, nil, nil
	case me != nil && me.Index == 1:
		return false, closedEvents, nil, nil // someone joined, or the ready node changed: look again
	}
	return false, nil, nil, err
}

// deleteOurs deletes our node while it is our session's; ZooKeeper applies
// it before anything this client sends next. The delete may go on in the
// background (the link is down): until a listing shows the node gone, it
// stays among the dropped.
func (d *DoubleBarrier) deleteOurs(name string) error {
	d.mu.Lock()
	owner := d.owner
	d.mu.Unlock()
	if err := engine.Leave(d.client, framework.Join(d.path, name), owner); err != nil {
		return err
	}
	d.mu.Lock()
	d.dropped = append(d.dropped, name)
	d.name, d.owner = "", 0 // nothing left to delete
	d.mu.Unlock()
	return nil
}

// clearName forgets our node, which is gone.
func (d *DoubleBarrier) clearName() {
	d.mu.Lock()
	d.name, d.owner = "", 0
	d.mu.Unlock()
}

// forget drops name from the dropped: it is gone.
func (d *DoubleBarrier) forget(name string) {
	d.mu.Lock()
	d.dropped = slices.DeleteFunc(d.dropped, func(n string) bool { return n == name })
	d.mu.Unlock()
}
