package persistent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/retry"
)

// errAgain: reconcile changed something; look again at once.
var errAgain = errors.New("look again")

// run is the keeper: it keeps the node in place until life ends or the
// client closes. Each turn looks at the node while the link is up, then
// waits for what may call for another look.
func (n *Node) run(life context.Context, sub *framework.Subscription[conn.Event]) {
	defer func() { sub.Close() }()
	<-sub.Changes() // the state as it stands: each turn below looks at it
	pacer := n.rt.Pacer()
	for life.Err() == nil {
		var watch <-chan zk.Event
		var pause <-chan time.Time
		// The turn's ctx outlives the look: the node's watch is handed
		// over under it (framework.Client.ExistsW), and under a namespace
		// its forwarding ends with it, so it ends only once the wait has.
		turn, endTurn := context.WithCancel(life)
		if n.client.State().IsConnected() {
			var again bool
			if watch, pause, again = n.look(life, turn, endTurn, pacer); again {
				endTurn()
				continue
			}
		}
		ok := n.await(life, &sub, watch, pause)
		endTurn()
		if !ok {
			return
		}
	}
}

// look reconciles the node over the link up now, and says what to wait
// for next: the node's watch, once it is in place (or another session's
// node is); or a pause, after a failure. again: look again at once (or
// life ended). ctx, the turn's, ends with cancel; it outlives the look,
// for the watch.
func (n *Node) look(life, ctx context.Context, cancel context.CancelFunc, pacer *retry.Pacer) (watch <-chan zk.Event, pause <-chan time.Time, again bool) {
	link := n.client.Session()
	// A reconcile under way on a link that drops is abandoned, so that
	// the drop is reported now, not when the retries end.
	n.rt.Go(func(context.Context) {
		select {
		case <-link.Suspended:
			cancel()
		case <-ctx.Done():
		}
	})
	watch, err := n.reconcile(ctx, link)
	switch {
	case err == nil:
		pacer.Reset()
		return watch, nil, false
	case errors.Is(err, errAgain), life.Err() != nil:
		return nil, nil, true
	case ctx.Err() == nil:
		n.notInPlace(err)
		n.client.Logger().Debug("zookeeper persistent node: will try again", "path", n.path, "err", err)
	}
	// Failed, or the link dropped: the subscription says what next, or,
	// if it has said it already, a look after a pause.
	return nil, time.After(pacer.Next()), false
}

// await waits for what calls for another look: a change of the session's
// state, the node's watch, the pause's end, a Set, or life's end. It
// reports false once the client is closed. A subscription that fell
// behind is replaced by a new one, whose first state stands for the
// changes missed.
func (n *Node) await(life context.Context, sub **framework.Subscription[conn.Event], watch <-chan zk.Event, pause <-chan time.Time) bool {
	select {
	case ev, ok := <-(*sub).Changes():
		if !ok && errors.Is((*sub).Err(), zkrecipes.ErrFellBehind) {
			(*sub).Close()
			*sub = n.client.Subscribe()
			ev, ok = <-(*sub).Changes() // queued before Subscribe returned
		}
		return ok && n.onState(ev.State)
	case <-watch:
	case <-pause:
	case <-n.kick:
	case <-life.Done():
	}
	return true
}

// onState says what the session's new state means for the node; false:
// the client closed.
func (n *Node) onState(state conn.State) bool {
	switch state {
	case conn.StateSuspended:
		if n.client.ErrorPolicy() == framework.StandardPolicy {
			n.notInPlace(zkrecipes.ErrSuspended)
		}
	case conn.StateLost:
		n.notInPlace(zkrecipes.ErrSessionLost)
	case conn.StateClosed:
		return false
	}
	return true
}

// reconcile makes the node, or checks that it is in place with the latest
// data and sets a watch on it. It returns the watch when there is nothing
// to do until it fires, errAgain when it changed something.
func (n *Node) reconcile(ctx context.Context, link conn.Session) (<-chan zk.Event, error) {
	if err := n.createsOut(ctx); err != nil {
		return nil, err
	}
	n.mu.Lock()
	actual, data, gen, written := n.actual, n.data, n.gen, n.written
	n.mu.Unlock()
	if actual == "" {
		return nil, n.create(ctx, link, true, n.path, data, gen)
	}
	exists, st, watch, err := n.client.ExistsW(ctx, actual)
	switch {
	case err != nil:
		return nil, err
	case !exists:
		n.disown(zkrecipes.ErrNodeDeleted)
		return nil, n.create(ctx, link, false, actual, data, gen)
	case n.othersEphemeral(st, link):
		n.disown(fmt.Errorf("%w: session 0x%x", ErrOtherOwner, st.EphemeralOwner))
		return watch, nil
	}
	n.own(st)
	if written < gen {
		return nil, n.write(ctx, actual, data, gen, st.Version)
	}
	return n.inPlace(actual, gen, st, link, watch)
}

// createsOut waits until the last create sent at most once is out of the
// client: one create at a time, and a look only then, as an abandoned
// create could land after the look.
func (n *Node) createsOut(ctx context.Context) error {
	n.mu.Lock()
	inflight := n.inflight
	n.mu.Unlock()
	if inflight == nil {
		return nil
	}
	select {
	case <-inflight:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// othersEphemeral says whether the node found (st) is not this Node's
// because of its owner. An ephemeral node is this Node's only if it is of
// the current session, and only an ephemeral Node's: a persistent or
// TTL-mode Node never takes another session's ephemeral for its node.
func (n *Node) othersEphemeral(st *zk.Stat, link conn.Session) bool {
	if n.ephemeral() {
		return st.EphemeralOwner != link.ID
	}
	return st.EphemeralOwner != 0
}

// disown records that the node at the Node's name is not its own (gone,
// or another session's), for reason.
func (n *Node) disown(reason error) {
	n.mu.Lock()
	n.mine, n.doubt = false, false
	n.mu.Unlock()
	n.notInPlace(reason)
}

// own records that the node found (st) is this Node's.
func (n *Node) own(st *zk.Stat) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mine, n.doubt = true, false
	if n.ephemeral() {
		n.owner = st.EphemeralOwner
	}
}

// write puts data of generation gen on the node at actual: data set while
// the node was away, or a node found in place that this Node did not make
// with its data (Curator's setData after NodeExists). version is the one
// just checked: a node changed meanwhile is looked at again first.
func (n *Node) write(ctx context.Context, actual string, data []byte, gen uint64, version int32) error {
	_, err := n.client.Set(ctx, actual, data, version)
	switch {
	case err == nil:
		n.mu.Lock()
		n.written = max(n.written, gen)
		n.mu.Unlock()
		return errAgain
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		return errAgain
	}
	return err
}

// inPlace records the node at actual (st) in place, checked over link,
// with data of generation gen, unless a Set came meanwhile, and returns
// its watch.
func (n *Node) inPlace(actual string, gen uint64, st *zk.Stat, link conn.Session, watch <-chan zk.Event) (<-chan zk.Event, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.gen != gen {
		return nil, errAgain // Set meanwhile
	}
	owner := int64(0)
	if n.ephemeral() {
		owner = st.EphemeralOwner
	}
	// A write by someone else since (a data change) is left alone, as
	// Curator's PersistentNode only watches again: see Status.InPlace.
	n.setStatusLocked(Status{InPlace: true, Path: actual, Czxid: st.Czxid, Owner: owner}, link)
	return watch, nil
}

// create makes the node at path (first: the Node's first create, at its
// path as given) and records the outcome. It returns errAgain when there
// is something to look at, or why it failed.
//
// A protected create is the client's: after a lost reply it finds its
// node by its unique name, and one that fails or is abandoned leaves
// nothing behind (the client deletes, in the background, what it may
// still make). Any other is sent at most once (createOnce).
func (n *Node) create(ctx context.Context, link conn.Session, first bool, path string, data []byte, gen uint64) error {
	opts := n.createOptions(first)
	if !n.protected {
		return n.createOnce(ctx, link, path, data, gen, opts)
	}
	name, err := n.client.Create(ctx, path, data, opts...)
	switch {
	case err == nil:
		n.mu.Lock()
		n.actual, n.mine = name, true
		if n.ephemeral() {
			n.owner = link.ID
		}
		n.written = max(n.written, gen)
		n.mu.Unlock()
		return errAgain
	case !first && errors.Is(err, zk.ErrNodeExists):
		return errAgain // the name is ours alone: the look says whose session
	}
	return err
}

// createOnce sends a create sent at most once, on one of the client's
// workers, which lets it finish even when ctx ends (and when the Node is
// closed: it is the client's work, not the Node's): the outcome of a
// create given up on is then still learned (see leave, which waits for
// it), and a look waits for it (see createsOut).
func (n *Node) createOnce(ctx context.Context, link conn.Session, path string, data []byte, gen uint64, opts []framework.CreateOption) error {
	c := n.client
	done := make(chan struct{})
	result := make(chan error, 1)
	n.mu.Lock()
	n.inflight = done
	n.mu.Unlock()
	n.creates.Add(1)
	send := func() {
		defer n.creates.Done()
		defer close(done)
		// Not cancelled with ctx: a request is never abandoned inside the
		// client, so that its outcome is known once it returns. Sent at
		// most once, it returns once answered or once its link is gone.
		_, err := c.Create(context.WithoutCancel(ctx), path, data, opts...)
		result <- n.created(path, link.ID, gen, err)
	}
	if !c.Go(send) {
		// The client is closing: nothing is sent.
		n.creates.Done()
		close(done)
		return zkrecipes.ErrClosed
	}
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// created records the outcome err of a create at path, sent at most once
// on session: an unknown outcome leaves the node in doubt, for a look to
// settle.
func (n *Node) created(path string, session int64, gen uint64, err error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case err == nil:
		n.actual, n.mine, n.doubt = path, true, false
		if n.ephemeral() {
			n.owner = session
		}
		n.written = max(n.written, gen)
		return errAgain
	case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
		n.actual, n.doubt = path, true
		if n.ephemeral() && !n.mine {
			n.owner = session
		}
		return errAgain
	case errors.Is(err, zk.ErrNodeExists):
		// The name is known: whose node it is, the look says.
		n.actual = path
		return errAgain
	}
	return err
}
