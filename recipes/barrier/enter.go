package barrier

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Enter makes this member's node and blocks until memberQty members have
// arrived (path/ready exists, or this member counts memberQty nodes and
// makes it). A member that arrives while a round is on joins it at once,
// as in Curator; one that finds the ready node of a round nobody is in
// any more deletes it and waits for a new round (see the package doc). It
// fails with ctx's error when ctx ends first, zkrecipes.ErrClosed when
// the DoubleBarrier or its client is closed, zkrecipes.ErrSessionLost when the
// session that made the node is lost meanwhile (zkrecipes.ErrNodeDeleted when
// someone else deleted the node), zkrecipes.ErrSuspended when the link
// was in doubt at the moment of entry (no proof of life within the loss
// signal's bound, as after a long freeze of the process: see
// framework.Client.CheckTrust), ErrAlreadyEntered when entered already,
// an error wrapping zkrecipes.ErrInvalidArgument for a nil ctx (nothing is
// sent). Whenever it fails, the node is deleted (in the background if need
// be).
func (d *DoubleBarrier) Enter(ctx context.Context) error {
	if err := d.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return d.rt.Err(zkrecipes.ErrNilContext)
	}
	return d.named(d.enterCall(ctx))
}

func (d *DoubleBarrier) enterCall(ctx context.Context) error {
	d.mu.Lock()
	switch {
	case d.rt.Closed():
		d.mu.Unlock()
		return zkrecipes.ErrClosed
	case d.state != idle:
		d.mu.Unlock()
		return ErrAlreadyEntered
	}
	// Within under mu, after the member's state, keeps the errors' order:
	// a closed client says so only to a call the state lets through. Close
	// takes mu only in its release, holding no lock of the Runtime.
	wctx, cancel, err := d.rt.Within(ctx)
	if err != nil {
		d.mu.Unlock()
		return err
	}
	defer cancel()
	d.state, d.name, d.owner, d.round = entering, uuid.NewString(), 0, 0
	name := d.name
	dropped := slices.Clone(d.dropped)
	d.mu.Unlock()

	round, err := d.enter(wctx, name, dropped)
	if err == nil {
		err = d.vouch(name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// Closed is read under mu, in the step that makes the member entered:
	// Close marks the Runtime closed before its release takes mu, so a
	// Close that this step does not see finds the member entered and
	// deletes its node (see Close).
	if err == nil && d.rt.Closed() {
		// Close came as we entered; it left the node to us.
		err = zkrecipes.ErrClosed
	}
	if err != nil {
		d.dropLocked()
		return ended(ctx, d.closed, err)
	}
	d.state, d.round = entered, round
	return nil
}

// enter runs Enter and returns the czxid of the round's ready node.
func (d *DoubleBarrier) enter(ctx context.Context, name string, dropped []string) (int64, error) {
	if err := d.deleteDropped(ctx, dropped); err != nil {
		return 0, err
	}
	st, err := d.makeNode(ctx, name)
	if err != nil {
		return 0, err
	}
	return d.awaitRound(ctx, name, st)
}

// deleteDropped deletes our nodes of earlier calls, first: one still there
// would count as a member, ours or the others', and let a round in one
// short. The names are ours alone, so a delete sent twice harms nobody.
func (d *DoubleBarrier) deleteDropped(ctx context.Context, dropped []string) error {
	for _, old := range dropped {
		err := d.client.Delete(ctx, framework.Join(d.path, old), -1)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return d.fail(ctx, err)
		}
		d.forget(old)
	}
	return nil
}

// makeNode makes our member node, name, and reads it back: its stat, whose
// owner it records, is the session the node lives and dies with, and its
// czxid tells whether we were there when a round began.
func (d *DoubleBarrier) makeNode(ctx context.Context, name string) (*zk.Stat, error) {
	node := framework.Join(d.path, name)
	made := d.client.Session() // the session the node is made on, unless it moves meanwhile
	// The name is new: a node already there is our own create, retried
	// after its reply was lost; and one a failed create may still make,
	// even after this call returned, is deleted (UniqueName).
	_, err := d.client.Create(ctx, node, d.data, framework.WithMode(framework.Ephemeral),
		framework.WithParentContainers(), framework.UniqueName())
	if err != nil {
		return nil, d.fail(ctx, err)
	}
	ok, st, err := d.client.Exists(ctx, node)
	if err != nil {
		_ = d.client.Delete(ctx, node, -1, framework.Deferred())
		return nil, d.fail(ctx, err)
	}
	if !ok {
		if s := d.client.Session(); s.ID == made.ID && !closedCh(s.Lost) {
			// Same session, alive: someone deleted it.
			return nil, fmt.Errorf("member %s: %w", name, zkrecipes.ErrNodeDeleted)
		}
		return nil, fmt.Errorf("%w: the new node %s went with its session", zkrecipes.ErrSessionLost, name)
	}
	d.mu.Lock()
	d.owner = st.EphemeralOwner
	d.mu.Unlock()
	return st, nil
}

// awaitRound looks (enterOnce) and waits for a change until our node, st,
// is in a round, and returns the czxid of the round's ready node.
func (d *DoubleBarrier) awaitRound(ctx context.Context, name string, st *zk.Stat) (int64, error) {
	mine := st.Czxid
	lost := d.sessionLost(st.EphemeralOwner)
	pacer := d.rt.Pacer()
	for {
		wctx, cancel := context.WithCancel(ctx)
		round, kidsChanged, readyChanged, err := d.enterOnce(wctx, name, mine)
		if round != 0 || err != nil && !transient(err) {
			cancel()
			return round, err
		}
		if err != nil {
			cancel()
			if err := d.sleep(ctx, pacer.Next(), nil); err != nil {
				return 0, err
			}
			continue
		}
		pacer.Reset()
		select {
		case <-kidsChanged:
		case <-readyChanged:
		case <-lost:
			// The next listing tells whether the node went with it. A
			// loss the client only declared may still end well: stop
			// listening for it, or it would wake us in a loop.
			lost = nil
		case <-ctx.Done():
		}
		cancel()
		if err := stopped(ctx, d.closed()); err != nil {
			return 0, err
		}
	}
}

// enterOnce looks once and decides: in (the czxid of the round's ready
// node), or a wait on the channels (both watches are set before the
// answer, so no change after it is missed; a closed channel: look again
// at once). mine is our node's czxid.
//
// The ready node is read before the members are listed. A member that
// found it absent and then counts memberQty nodes counts only nodes that
// were there after the last round ended: that round's last member node
// went in the same multi as its ready node.
func (d *DoubleBarrier) enterOnce(ctx context.Context, name string, mine int64) (round int64, kidsChanged, readyChanged <-chan zk.Event, err error) {
	ready, rst, readyChanged, err := d.client.ExistsW(ctx, d.ready)
	if err != nil {
		return 0, nil, nil, err
	}
	kids, _, kidsChanged, err := d.client.ChildrenW(ctx, d.path)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil, nil, d.goneErr(name) // our node held the directory up
	}
	if err != nil {
		return 0, nil, nil, err
	}
	if !slices.Contains(kids, name) {
		return 0, nil, nil, d.goneErr(name)
	}
	switch {
	case ready && mine < rst.Czxid:
		// We were there when the round began: every listing a leaver of
		// this round takes shows our node while it exists.
		return rst.Czxid, nil, nil, nil
	case ready:
		round, err := d.join(ctx, kids, name, rst)
		return round, closedEvents, nil, err
	case len(members(kids)) < d.qty:
		return 0, kidsChanged, readyChanged, nil
	}
	// Made with a bump of the directory's version: see epoch.
	_, err = d.client.Multi(ctx,
		&zk.CreateRequest{Path: d.ready, Data: d.data},
		&zk.SetDataRequest{Path: d.path, Data: []byte{}, Version: -1})
	if errors.Is(err, zk.ErrNodeExists) {
		return 0, closedEvents, nil, nil // another's, or ours resent: join it
	}
	if err != nil {
		return 0, nil, nil, err
	}
	ok, rst, err := d.client.Exists(ctx, d.ready)
	if err != nil || !ok {
		return 0, closedEvents, nil, err
	}
	return rst.Czxid, nil, nil, nil
}

// join is the way in for a member whose node is newer than the round's
// ready node rst: it joins the round (a member arriving late, as in
// Curator) only while a member of the round is still in, and only by
// bumping the ready node's version, which the last leaver's delete of the
// ready node checks: the round cannot end behind the back of a member
// that joined it. It returns the round's czxid once joined. A round with
// nobody left in it is over: its ready node was left behind (its last
// member died, or every member gave up) and is deleted, so that nobody
// enters by it. Then, and when the ready node changed meanwhile, it
// returns 0: look again.
func (d *DoubleBarrier) join(ctx context.Context, kids []string, name string, rst *zk.Stat) (int64, error) {
	live, err := d.live(ctx, kids, name, rst.Mzxid)
	if err != nil {
		return 0, err
	}
	epoch, ok, err := d.epoch(ctx, rst)
	if err != nil || !ok {
		return 0, err
	}
	ops := []any{
		// While our node stands, the directory cannot be reaped and made
		// again: its version only grows.
		&zk.CheckVersionRequest{Path: framework.Join(d.path, name), Version: -1},
		&zk.CheckVersionRequest{Path: d.path, Version: epoch},
	}
	if live {
		ops = append(ops, &zk.SetDataRequest{Path: d.ready, Data: d.data, Version: rst.Version})
	} else {
		ops = append(ops, &zk.DeleteRequest{Path: d.ready, Version: rst.Version})
	}
	// A resend of an applied multi fails whole: the ready node's version
	// moved, or it is gone, or another stands, made with a bump of the
	// directory's version.
	_, err = d.client.Multi(ctx, ops...)
	var me *framework.MultiOpError
	switch {
	case err == nil && live:
		return rst.Czxid, nil
	case err == nil, errors.As(err, &me) && me.Index > 0:
		return 0, nil
	case me != nil:
		return 0, d.goneErr(name)
	}
	return 0, err
}

// epoch reads the directory's version, then checks that the ready node is
// still the one rst says (same czxid, same version), and returns the
// version, or false if the ready node changed.
//
// A write conditional on the ready node's version alone could hit a later
// ready node: one deleted and made again since it was read has the same
// version (every one starts at 0), and a member that read a ready node
// left behind could otherwise delete the next round's, or join a round
// that is over by bumping the next one's. Every ready node our members
// make is made in one multi with a bump of the directory's version, so a
// write conditional also on the directory's version, read before the
// ready node, hits the ready node read or nothing.
func (d *DoubleBarrier) epoch(ctx context.Context, rst *zk.Stat) (int32, bool, error) {
	ok, dst, err := d.client.Exists(ctx, d.path)
	if err != nil || !ok {
		return 0, false, err
	}
	ok, now, err := d.client.Exists(ctx, d.ready)
	if err != nil || !ok || now.Czxid != rst.Czxid || now.Version != rst.Version {
		return 0, false, err
	}
	return dst.Version, true, nil
}

// live reports whether a member node other than ours was already there at
// the ready node's last change (mzxid): its creation, or the last join. A
// member of the round is in it until its node goes; a node made since is
// an arrival that has not joined.
func (d *DoubleBarrier) live(ctx context.Context, kids []string, name string, mzxid int64) (bool, error) {
	for _, k := range members(kids) {
		if k == name {
			continue
		}
		ok, st, err := d.client.Exists(ctx, framework.Join(d.path, k))
		if err != nil {
			return false, err
		}
		if ok && st.Czxid <= mzxid {
			return true, nil
		}
	}
	return false, nil
}

// vouch is the last check before Enter lets the caller in: the session
// that made our node is still the client's, and its link has proof of life
// (framework.Client.CheckTrust). A process thawed after a freeze longer
// than the session's bound must not enter on what waited in its socket.
func (d *DoubleBarrier) vouch(name string) error {
	d.mu.Lock()
	owner := d.owner
	d.mu.Unlock()
	s := d.client.Session()
	if s.ID != owner {
		return fmt.Errorf("member %s: %w", name, zkrecipes.ErrSessionLost)
	}
	if err := d.client.CheckTrust(s); err != nil {
		return fmt.Errorf("member %s: %w", name, err)
	}
	return nil
}
