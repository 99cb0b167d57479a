package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

// Registrations is where a Discovery's registrations stand, as its
// Subscribe delivers them: each value is the whole state.
type Registrations struct {
	// Statuses holds the status of each registration (its node's
	// persistent.Status) by instance id: every id Register was called
	// for, until Unregister or Close, or the Register's failure. A
	// registration whose node a newer registration of its id (another
	// session's) has taken is not in place, its Err wrapping
	// persistent.ErrOtherOwner. Each value has a map of its own.
	Statuses map[string]persistent.Status
	// Changed is the id whose status changed, or whose registration
	// began or ended (it is then absent from Statuses); "" in a
	// subscription's first value.
	Changed string
}

// registration is one instance this Discovery keeps registered.
type registration struct {
	id   string
	inst Instance // guarded by the Discovery's mu
	node *persistent.Node
	sub  *framework.Subscription[persistent.Status]
	// status is the last status published (under the Discovery's mu).
	status persistent.Status
	// started is closed once the Register that made it has returned: its
	// node started, or the registration removed.
	started chan struct{}
	// shown is closed once a status in place has been published, or the
	// registration removed: Register returns after it, so that a
	// subscriber that comes next is told what Register says.
	shown chan struct{}
	// forwarded is closed once its forwarder has returned.
	forwarded chan struct{}
}

// stop closes the registration's node (deleting it if it is still this
// registration's) and its subscription, which ends its forwarder.
func (r *registration) stop() {
	_ = r.node.Close()
	r.sub.Close()
}

// end stops reg at Close of the Discovery, its forwarder still running:
// its node closes (deleting it), the forwarder passes the node's last
// statuses on and returns as the node's subscription ends, then reg
// leaves the registrations, which says so too.
func (d *Discovery) end(reg *registration) {
	_ = reg.node.Close()
	<-reg.forwarded
	d.mu.Lock()
	d.removeLocked(reg)
	d.mu.Unlock()
	reg.sub.Close()
}

// Register registers inst under basePath/<name>/<id> and keeps it
// registered until Unregister or Close: a Dynamic instance's ephemeral
// node is made again after a session loss, or a delete by someone else,
// as Curator re-registers on reconnection. It returns once the node is in
// place.
//
// An ephemeral node of another session at the path is replaced, as
// Curator's registerService deletes what it finds and makes its own: the
// node of this instance's previous process, say, or another live
// registration of the same id (two processes given one id): the newest
// Register wins. A Dynamic instance's node replaces the other in one
// multi, so that the other registration, which makes its node again as
// soon as it sees it gone, finds this one's instead. The registration
// that lost its node is told (Registration, Subscribe: not in place, its
// Err wrapping persistent.ErrOtherOwner) and makes its node again only
// once the newer one's goes.
//
// Registering an id again updates it (Update) and takes its node back
// from another session's registration if one has taken it; a Register of
// the id still in progress, from another goroutine, is waited for first.
func (d *Discovery) Register(ctx context.Context, inst Instance) error {
	if err := d.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return d.err(zkrecipes.ErrNilContext)
	}
	data, err := d.check(inst)
	if err != nil {
		return d.err(err)
	}
	if inst.ServiceType == "" {
		inst.ServiceType = Dynamic
	}
	var reg *registration
	for reg == nil {
		prev, err := d.registered(ctx, inst.ID)
		switch {
		case err != nil:
			return d.err(err)
		case prev != nil:
			return d.update(ctx, prev, inst, data, true)
		}
		// nil, nil: another Register was quicker: wait for it.
		if reg, err = d.add(inst, data); err != nil {
			return d.err(err)
		}
	}
	defer close(reg.started)
	return d.place(ctx, reg, inst, data)
}

// add makes inst's registration, not started, and its forwarder; nil if
// another Register of the id has made one meanwhile.
func (d *Discovery) add(inst Instance, data []byte) (*registration, error) {
	d.mu.Lock()
	// Closed under mu: Close's drain, which takes mu after Close began,
	// finds every registration added before.
	if d.rt.Closed() {
		d.mu.Unlock()
		return nil, zkrecipes.ErrClosed
	}
	if _, ok := d.regs[inst.ID]; ok {
		d.mu.Unlock()
		return nil, nil
	}
	node, err := persistent.New(d.client, d.instancePath(inst.Name, inst.ID), data, nodeOptions(inst.ServiceType)...)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	sub := node.Subscribe()
	// The status as it stands, first: every later value is a change.
	reg := &registration{id: inst.ID, inst: inst, node: node, sub: sub,
		status: <-sub.Changes(), started: make(chan struct{}), shown: make(chan struct{}),
		forwarded: make(chan struct{})}
	// Started under mu: it publishes nothing before reg is registered.
	if !d.rt.Go(func(life context.Context) { d.forward(life, reg) }) {
		d.mu.Unlock()
		reg.stop()
		return nil, zkrecipes.ErrClosed
	}
	d.regs[inst.ID] = reg
	d.publishLocked(inst.ID)
	d.mu.Unlock()
	return reg, nil
}

// nodeOptions are the options of the node of an instance of type t.
func nodeOptions(t ServiceType) []persistent.Option {
	var opts []persistent.Option
	switch t {
	case Static, Permanent:
		opts = append(opts, persistent.Persistent())
	case DynamicSequential:
		// Protected, so that a create whose reply was lost finds its
		// node instead of registering the instance twice (Curator's
		// registerService does not protect it: a phantom instance
		// stays). Curator's readers list the children and read the
		// JSON: the prefix is invisible to them.
		opts = append(opts, persistent.Sequential(), persistent.Protected())
	}
	return opts
}

// place puts reg's node in place and returns once a subscriber has been
// told, or ctx ends (in place all the same); if the node cannot be put in
// place, reg ends, and so does a node replace made for it.
func (d *Discovery) place(ctx context.Context, reg *registration, inst Instance, data []byte) error {
	made, err := d.replace(ctx, inst, data)
	if err == nil {
		err = reg.node.Start(ctx)
	}
	if err != nil {
		d.mu.Lock()
		d.removeLocked(reg)
		d.mu.Unlock()
		reg.stop()
		if made != 0 {
			d.dropMade(d.instancePath(inst.Name, inst.ID), made)
		}
		return d.err(err)
	}
	select {
	case <-reg.shown:
	case <-ctx.Done(): // in place all the same
	}
	return nil
}

// replace makes the path of inst free for this Discovery's registration
// when an ephemeral node of another session is there. For a Dynamic
// instance it puts its own node there in the same multi (data, an
// ephemeral of the current session), which the registration's
// persistent.Node then finds and takes as its own; it returns that
// session (0 if it made none), also with an error: the node it may have
// made is then the caller's to delete. For Static and Permanent instances
// it deletes the other's node, and the registration makes its own.
func (d *Discovery) replace(ctx context.Context, inst Instance, data []byte) (int64, error) {
	if inst.ServiceType == DynamicSequential {
		return 0, nil // a protected name of its own: nobody else's node is there
	}
	c := d.client
	path := d.instancePath(inst.Name, inst.ID)
	var made int64
	for {
		s, err := c.WaitConnected(ctx)
		if err != nil {
			return made, err
		}
		ok, st, err := c.Exists(ctx, path)
		if err != nil || !ok || st.EphemeralOwner == 0 || st.EphemeralOwner == s.ID {
			return made, err
		}
		if inst.ServiceType != Dynamic {
			// By version, so that a node made again meanwhile is not
			// touched.
			err = c.Delete(ctx, path, st.Version)
			if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
				err = nil
			}
			return made, err
		}
		// Sent at most once: a retry after a lost reply could delete a
		// node made meanwhile. An unknown outcome is settled by looking.
		_, err = c.MultiOnce(ctx,
			&zk.DeleteRequest{Path: path, Version: st.Version},
			&zk.CreateRequest{Path: path, Data: data, Flags: zk.FlagEphemeral})
		switch {
		case err == nil:
			return s.ID, nil
		case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
			made = s.ID
		case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
			// The other node went or changed meanwhile: look again.
		default:
			return made, err
		}
	}
}

// dropMade deletes the node that replace made (or may have made) at path
// on session, for a Register that failed: only while it is that session's
// ephemeral, and, with the link up, before anything this client sends
// next (a Register tried again at once makes its node after it).
func (d *Discovery) dropMade(path string, session int64) {
	c := d.client
	if s := c.Session(); s.ID != session || !c.State().IsConnected() {
		_ = c.Delete(context.Background(), path, -1, framework.OwnedBy(session), framework.Deferred())
		return
	}
	// Bounded as a release is: past it the delete goes on in the
	// background.
	ctx, cancel := context.WithTimeout(context.Background(), c.ReleaseTimeout())
	defer cancel()
	ok, st, err := c.Exists(ctx, path)
	switch {
	case err != nil:
		_ = c.Delete(context.Background(), path, -1, framework.OwnedBy(session), framework.Deferred())
	case ok && st.EphemeralOwner == session:
		_ = c.Delete(ctx, path, -1, framework.OwnedBy(session), framework.InBackground())
	}
}

// registered returns this Discovery's registration of id once the
// Register that makes it has returned, nil if there is none (or that
// Register failed), or ctx's error.
func (d *Discovery) registered(ctx context.Context, id string) (*registration, error) {
	d.mu.Lock()
	reg := d.regs[id]
	d.mu.Unlock()
	switch {
	case d.rt.Closed():
		return nil, zkrecipes.ErrClosed
	case reg == nil:
		return nil, nil
	}
	select {
	case <-reg.started:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt.Closed() {
		return nil, zkrecipes.ErrClosed
	}
	if d.regs[id] != reg {
		return nil, nil
	}
	return reg, nil
}

// Update writes inst, an instance this Discovery registered (same id),
// over its node, as Curator's updateService. The data is kept for every
// re-registration. A Register of the id still in progress is waited for
// first. It fails with ErrNotRegistered for an id it did not register.
// Unlike Register, it never takes the node from another session's
// registration: while one holds it, Update waits, and its error when ctx
// ends wraps persistent.ErrOtherOwner (the data is kept all the same).
func (d *Discovery) Update(ctx context.Context, inst Instance) error {
	if err := d.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return d.err(zkrecipes.ErrNilContext)
	}
	data, err := d.check(inst)
	if err != nil {
		return d.err(err)
	}
	reg, err := d.registered(ctx, inst.ID)
	switch {
	case err != nil:
		return d.err(err)
	case reg == nil:
		return d.err(fmt.Errorf("%w: %s/%s", ErrNotRegistered, inst.Name, inst.ID))
	}
	return d.update(ctx, reg, inst, data, false)
}

// update writes inst over reg's node; first, for a Register (replace),
// it takes the node back from another session's registration.
func (d *Discovery) update(ctx context.Context, reg *registration, inst Instance, data []byte, replace bool) error {
	d.mu.Lock()
	was := reg.inst
	d.mu.Unlock()
	if inst.Name != was.Name || (inst.ServiceType != "" && inst.ServiceType != was.ServiceType) {
		return d.err(fmt.Errorf("%w: instance %s is registered as %s (%s): unregister it first",
			zkrecipes.ErrInvalidArgument, inst.ID, was.Name, was.ServiceType))
	}
	if inst.ServiceType == "" {
		// An Update that leaves the type out keeps the registered one,
		// in the node's JSON too.
		inst.ServiceType = was.ServiceType
		var err error
		if data, err = json.Marshal(inst); err != nil {
			return d.err(fmt.Errorf("%w: %w", zkrecipes.ErrInvalidArgument, err))
		}
	}
	if replace {
		// A node made here is the registration's: its persistent.Node,
		// running, takes it (and deletes it at the end).
		if _, err := d.replace(ctx, inst, data); err != nil {
			return d.err(err)
		}
	}
	if err := reg.node.Set(ctx, data); err != nil {
		return d.err(err)
	}
	d.mu.Lock()
	reg.inst = inst
	d.mu.Unlock()
	return nil
}

// Unregister deletes the node of inst (by id), an instance this Discovery
// registered, guaranteed, and stops keeping it registered. It fails with
// ErrNotRegistered for an id it did not register, and with
// zkrecipes.ErrClosed after Close (which unregistered everything).
func (d *Discovery) Unregister(inst Instance) error {
	if err := d.usable(); err != nil {
		return err
	}
	d.mu.Lock()
	// Closed under mu: a registration Close's drain ends is not removed
	// here too.
	closed := d.rt.Closed()
	reg, ok := d.regs[inst.ID]
	if ok && !closed {
		d.removeLocked(reg)
	}
	d.mu.Unlock()
	switch {
	case closed:
		return d.err(zkrecipes.ErrClosed)
	case !ok:
		return d.err(fmt.Errorf("%w: %s/%s", ErrNotRegistered, inst.Name, inst.ID))
	}
	reg.stop()
	return nil
}

// Registration returns where this Discovery's registration of id stands
// (its node's persistent.Status), and false if it registered no such id.
// A registration whose node a newer registration of its id (another
// session's) has taken is not in place, its Err wrapping
// persistent.ErrOtherOwner.
func (d *Discovery) Registration(id string) (persistent.Status, bool) {
	if d.usable() != nil {
		return persistent.Status{}, false
	}
	d.mu.Lock()
	reg, ok := d.regs[id]
	d.mu.Unlock()
	if !ok {
		return persistent.Status{}, false
	}
	return reg.node.Status(), true
}

// Subscribe returns a subscription to this Discovery's registrations:
// first their current state (every registration's status by id), then a
// new value each time one begins (Register), changes (its node made,
// gone, taken by another session's registration, or no longer trusted:
// the link dropped, the session was lost) or ends (Unregister, a failed
// Register, Close). Each value is the whole state; Changed names the id
// it is about. Its channel is closed after Close of the Discovery, once
// the values queued before have been taken, or at once by Close of the
// subscription; a reader that stops reading before then must Close it. A reader that falls more than framework.DefaultBound
// changes behind is told, never skipped silently: the subscription ends,
// its Err wrapping zkrecipes.ErrFellBehind (docs/vocabulary.md).
func (d *Discovery) Subscribe() *framework.Subscription[Registrations] {
	if d.usable() != nil {
		var f framework.Feed[Registrations]
		f.End(nil)
		return f.Subscribe()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.feed.SubscribeWith(Registrations{Statuses: d.statusesLocked()})
}

func (d *Discovery) statusesLocked() map[string]persistent.Status {
	out := make(map[string]persistent.Status, len(d.regs))
	for id, reg := range d.regs {
		out[id] = reg.status
	}
	return out
}

// publishLocked publishes the registrations' state after id's change.
func (d *Discovery) publishLocked(id string) {
	d.feed.Publish(Registrations{Statuses: d.statusesLocked(), Changed: id})
}

// removeLocked ends reg's place among the registrations, if it still
// has it, and says so; the caller stops it.
func (d *Discovery) removeLocked(reg *registration) {
	if d.regs[reg.id] != reg {
		return
	}
	delete(d.regs, reg.id)
	d.publishLocked(reg.id)
	if !isClosed(reg.shown) {
		close(reg.shown) // a Register that waits for it is done
	}
}

// forward publishes each status of reg's node while reg is registered (the
// Node publishes only changes); it ends with reg's subscription
// (registration.stop), or with life: at Close of the Discovery, or when
// its client closes, which waits for it.
func (d *Discovery) forward(life context.Context, reg *registration) {
	defer close(reg.forwarded)
	defer func() {
		// A Register that waits for the status in place is done: the
		// Discovery or its client is closing, and it will not be told.
		d.mu.Lock()
		if !isClosed(reg.shown) {
			close(reg.shown)
		}
		d.mu.Unlock()
	}()
	for {
		select {
		case st, ok := <-reg.sub.Changes():
			if !ok {
				return
			}
			d.mu.Lock()
			if d.regs[reg.id] == reg {
				reg.status = st
				d.publishLocked(reg.id)
				if st.InPlace && !isClosed(reg.shown) {
					close(reg.shown)
				}
			}
			d.mu.Unlock()
		case <-life.Done():
			return
		}
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
