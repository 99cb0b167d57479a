package barrier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/retry"
)

// readyNode is Curator's name for the node that says "memberQty arrived".
const readyNode = "ready"

// DoubleBarrier is one member of Curator's DistributedDoubleBarrier: Enter
// returns once memberQty members have arrived, Leave once every member
// has left. Enter and Leave alternate: Leave needs a successful Enter, and
// a DoubleBarrier that left may Enter again (with a new node), on the same
// path round after round (see the package doc). A DoubleBarrier is safe
// for concurrent use, but runs one Enter or Leave at a time.
type DoubleBarrier struct {
	client  *framework.Client
	path    string
	ready   string
	qty     int
	data    []byte
	closing chan struct{}

	mu     sync.Mutex
	state  memberState
	name   string // our node's name while entering or entered
	owner  int64  // the session that made it, once known
	round  int64  // the czxid of our round's ready node, while entered
	closed bool
	// dropped are the names of our nodes of earlier calls whose delete
	// may not have landed yet (it went on in the background): the next
	// Enter deletes them first, so that none of ours counts twice.
	dropped []string
}

type memberState int

const (
	idle memberState = iota
	entering
	entered
	leaving
)

// NewDouble returns a member of the double barrier at path for memberQty
// members (at least 1). It sends nothing.
func NewDouble(client *framework.Client, path string, memberQty int, opts ...Option) (*DoubleBarrier, error) {
	if client == nil {
		return nil, framework.RecipeErr(doubleRecipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(doubleRecipe, path, err)
	}
	if memberQty < 1 {
		return nil, framework.RecipeErr(doubleRecipe, path, fmt.Errorf("%w: memberQty %d, must be at least 1", zkrecipes.ErrInvalidArgument, memberQty))
	}
	// A member's node's data (Enter), the longest name the id goes with.
	cfg, err := newConfig(opts, func(id []byte) error {
		return client.CheckCreate(framework.Join(path, uuid.NewString()), id, framework.WithMode(framework.Ephemeral))
	})
	if err != nil {
		return nil, framework.RecipeErr(doubleRecipe, path, err)
	}
	return &DoubleBarrier{
		client: client, path: path, ready: framework.Join(path, readyNode), qty: memberQty,
		data: []byte(cfg.id), closing: make(chan struct{}),
	}, nil
}

// Path returns the barrier's path ("" for a nil DoubleBarrier).
func (d *DoubleBarrier) Path() string {
	if d == nil {
		return ""
	}
	return d.path
}

// MemberQty returns the number of members the barrier waits for.
func (d *DoubleBarrier) MemberQty() int {
	if d == nil {
		return 0
	}
	return d.qty
}

// usable says why d cannot be used: it is nil or a zero DoubleBarrier.
func (d *DoubleBarrier) usable() error {
	if d == nil || d.client == nil {
		return framework.RecipeErr(doubleRecipe, "", fmt.Errorf("%w: a nil or zero DoubleBarrier: make one with NewDouble", zkrecipes.ErrInvalidArgument))
	}
	return nil
}

// named names the barrier in err.
func (d *DoubleBarrier) named(err error) error { return framework.RecipeErr(doubleRecipe, d.path, err) }

// Node returns the path of this member's node while it is entering or
// entered, else "".
func (d *DoubleBarrier) Node() string {
	if d.usable() != nil {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.name == "" {
		return ""
	}
	return framework.Join(d.path, d.name)
}

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
		return d.named(fmt.Errorf("%w: nil context", zkrecipes.ErrInvalidArgument))
	}
	return d.named(d.enterCall(ctx))
}

func (d *DoubleBarrier) enterCall(ctx context.Context) error {
	d.mu.Lock()
	switch {
	case d.closed:
		d.mu.Unlock()
		return zkrecipes.ErrClosed
	case d.state != idle:
		d.mu.Unlock()
		return ErrAlreadyEntered
	}
	d.state, d.name, d.owner, d.round = entering, uuid.NewString(), 0, 0
	name := d.name
	dropped := slices.Clone(d.dropped)
	d.mu.Unlock()

	round, err := d.enter(ctx, name, dropped)
	if err == nil {
		err = d.vouch(name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil && d.closed {
		// Close came as we entered; it left the node to us.
		err = zkrecipes.ErrClosed
	}
	if err != nil {
		d.dropLocked()
		return err
	}
	d.state, d.round = entered, round
	return nil
}

// enter runs Enter and returns the czxid of the round's ready node.
func (d *DoubleBarrier) enter(ctx context.Context, name string, dropped []string) (int64, error) {
	// Our nodes of earlier calls go first: one still there would count as
	// a member, ours or the others', and let a round in one short. The
	// names are ours alone, so a delete sent twice harms nobody.
	for _, old := range dropped {
		err := d.client.Delete(ctx, framework.Join(d.path, old), -1)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return 0, d.fail(ctx, err)
		}
		d.forget(old)
	}
	node := framework.Join(d.path, name)
	made := d.client.Session() // the session the node is made on, unless it moves meanwhile
	// The name is new: a node already there is our own create, retried
	// after its reply was lost; and one a failed create may still make,
	// even after this call returned, is deleted (UniqueName).
	_, err := d.client.Create(ctx, node, d.data, framework.WithMode(framework.Ephemeral),
		framework.WithParentContainers(), framework.UniqueName())
	if err != nil {
		return 0, d.fail(ctx, err)
	}
	ok, st, err := d.client.Exists(ctx, node)
	if err != nil {
		_ = d.client.DeleteLater(node, 0)
		return 0, d.fail(ctx, err)
	}
	if !ok {
		if s := d.client.Session(); s.ID == made.ID && !closedCh(s.Lost) {
			// Same session, alive: someone deleted it.
			return 0, fmt.Errorf("member %s: %w", name, zkrecipes.ErrNodeDeleted)
		}
		return 0, fmt.Errorf("%w: the new node %s went with its session", zkrecipes.ErrSessionLost, name)
	}
	d.mu.Lock()
	d.owner = st.EphemeralOwner
	d.mu.Unlock()
	mine := st.Czxid
	clientClosing := d.client.Done()
	lost := d.sessionLost(st.EphemeralOwner)
	pacer := d.client.RetryPolicy().Pacer()
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
		case <-d.closing:
		case <-clientClosing:
		}
		cancel()
		if err := d.stopped(ctx, clientClosing); err != nil {
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
		return d.named(fmt.Errorf("%w: nil context", zkrecipes.ErrInvalidArgument))
	}
	return d.named(d.leaveCall(ctx))
}

func (d *DoubleBarrier) leaveCall(ctx context.Context) error {
	d.mu.Lock()
	switch {
	case d.closed:
		d.mu.Unlock()
		return zkrecipes.ErrClosed
	case d.state != entered:
		d.mu.Unlock()
		return ErrNotEntered
	}
	d.state = leaving
	name, round := d.name, d.round
	d.mu.Unlock()

	err := d.leave(ctx, name, round)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropLocked()
	return err
}

func (d *DoubleBarrier) leave(ctx context.Context, name string, round int64) error {
	clientClosing := d.client.Done()
	ours := true // our node should still be there
	pacer := d.client.RetryPolicy().Pacer()
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
		case <-d.closing:
		case <-clientClosing:
		}
		cancel()
		if err := d.stopped(ctx, clientClosing); err != nil {
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
	var watch string
	switch {
	case *ours && i < 0:
		return false, nil, nil, d.goneErr(name)
	case !*ours && i >= 0:
		// Our delete went on in the background and has not landed: our
		// node must go before we may say we left.
		if err := d.client.Delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false, nil, nil, err
		}
		return false, closedEvents, nil, nil
	case !*ours:
		d.forget(name) // gone, as the listing shows
	}
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
		// Every member node is gone but the ready node stands: the last
		// member's session ended before it could end the round. Delete it
		// at the version read, and at the directory's version read before
		// (see epoch): a member that joins meanwhile bumps the one, a new
		// round's ready node the other. Safe to resend for the same
		// reasons.
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
	default:
		watch = ms[0]
	}
	exists, _, member, err = d.client.ExistsW(ctx, framework.Join(d.path, watch))
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

// Close ends this member: an Enter or Leave under way and every later call
// return zkrecipes.ErrClosed. It deletes this member's node, if it has one
// (guaranteed, in the background: it belongs to this member's session),
// and leaves the barrier's directory and ready node to the other members.
// The client is not closed. It is idempotent and returns nil (an error
// only for a nil or zero DoubleBarrier).
func (d *DoubleBarrier) Close() error {
	if err := d.usable(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	close(d.closing)
	if d.state == entered {
		d.dropLocked()
	}
	return nil
}

// dropLocked forgets our node and deletes it, guaranteed, keeping its name
// among the dropped until the next Enter has seen it gone. A node whose
// owner is not known yet may be anyone's of ours: its name is new, so it
// is deleted whoever owns it.
func (d *DoubleBarrier) dropLocked() {
	if d.name != "" {
		node := framework.Join(d.path, d.name)
		if d.owner != 0 {
			_ = engine.Leave(d.client, node, d.owner)
		} else {
			_ = d.client.DeleteLater(node, 0)
		}
		d.dropped = append(d.dropped, d.name)
	}
	d.state, d.name, d.owner, d.round = idle, "", 0, 0
}

// goneErr says why our node is not there: the session that made it is
// over (the client, or go-zookeeper underneath, which may be ahead of it,
// is on another one, or has given it up), or someone deleted it.
func (d *DoubleBarrier) goneErr(name string) error {
	d.mu.Lock()
	owner := d.owner
	d.mu.Unlock()
	s := d.client.Session()
	if owner != 0 && (s.ID != owner || closedCh(s.Lost)) {
		return fmt.Errorf("member %s: %w", name, zkrecipes.ErrSessionLost)
	}
	return fmt.Errorf("member %s: %w", name, zkrecipes.ErrNodeDeleted)
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

// sessionGone reports whether the client is on another session than the
// one that made our node (or on none: it was lost), so the node is gone.
func (d *DoubleBarrier) sessionGone() bool {
	d.mu.Lock()
	owner := d.owner
	d.mu.Unlock()
	return owner != 0 && d.client.Session().ID != owner
}

// sessionLost is closed when session owner is lost, or at once if the
// client is on another session already.
func (d *DoubleBarrier) sessionLost(owner int64) <-chan struct{} {
	s := d.client.Session()
	if s.ID != owner {
		return closedEvents2
	}
	return s.Lost
}

func (d *DoubleBarrier) stopped(ctx context.Context, clientClosing <-chan struct{}) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if closedCh(d.closing) || closedCh(clientClosing) {
		return zkrecipes.ErrClosed
	}
	return nil
}

func (d *DoubleBarrier) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	return waitErr(ctx, engine.Err(err, closedCh(d.closing)))
}

func (d *DoubleBarrier) sleep(ctx context.Context, p time.Duration, lost <-chan struct{}) error {
	t := time.NewTimer(p)
	defer t.Stop()
	select {
	case <-t.C:
	case <-lost:
	case <-ctx.Done():
	case <-d.closing:
	}
	return d.stopped(ctx, d.client.Done())
}

// transient: worth looking again on the same member node. A session
// expiry is not (the node is gone), but the next listing says so itself.
func transient(err error) bool {
	return retry.Retryable(err) || errors.Is(err, zk.ErrSessionExpired)
}

// members are the member nodes of a listing, sorted as Curator sorts them.
func members(kids []string) []string {
	ms := make([]string, 0, len(kids))
	for _, k := range kids {
		if k != readyNode {
			ms = append(ms, k)
		}
	}
	slices.Sort(ms)
	return ms
}

// closedEvents and closedEvents2 are channels that are always ready.
var (
	closedEvents  = func() chan zk.Event { ch := make(chan zk.Event); close(ch); return ch }()
	closedEvents2 = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()
)
