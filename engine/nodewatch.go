package engine

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// A Node's watchers: what follows its loss signal and its node, started
// at the first look at its end (watch), and the reads that stand in for
// them until then (heed, Confirm).

// watch starts the node's watchers, once: until someone waits on the
// node's end (Done, Err, a Hold's Done, Err or Context), nothing follows
// it, and a hold given back unwatched (a lock per key) costs no goroutine
// and no request for it. Nothing is missed by starting late: the loss
// signal is a channel that stays closed, Grant.Changed keeps its event,
// and watchNode's first read sees the node as it is now. A Node that
// ended, or was stopped, first never starts them.
//
// With Grant.Changed, one goroutine waits for the session's signal and
// the directory's change; the node's own watch (watchNode, a goroutine of
// its own since it makes network calls) starts only when the directory
// changes. Without it, both start now.
func (n *Node) watch() {
	if n.watching.Load() {
		return
	}
	n.heed() // a signal that fired unwatched: its reason, as then
	n.mu.Lock()
	if n.watching.Load() {
		n.mu.Unlock()
		return
	}
	n.watching.Store(true)
	if n.err != nil {
		n.mu.Unlock()
		return
	}
	// Release stops the watchers and waits for them: their requests must
	// end with life (framework.HandOff). Counted under mu, so that halt's
	// waiter sees them.
	n.life, n.cancel = context.WithCancel(framework.HandOff(context.Background()))
	changed := n.changed
	n.changed = nil
	if changed != nil {
		select {
		case <-changed:
			changed = nil // fired while nobody watched: the node's watch starts now
		default:
			n.settled.Store(true) // not deleted, nor made again, since the grant
		}
	}
	starts := 1
	if changed == nil {
		starts = 2
	}
	n.wg.Add(starts)
	n.mu.Unlock()
	n.start(func() { n.watchSignal(changed) })
	if changed == nil {
		n.start(n.watchNode)
	}
}

// Confirm is for a recipe about to hand out another acquisition of n (a
// reentrant acquire): a node nobody has waited on has not been followed
// (see Done), nor has one whose watchers started too late to have judged
// it yet, so Confirm reads it now, and ends n if it was deleted, or made
// again by someone else, since its grant; n is followed from then on. A
// read that fails (the link down, ctx ended) ends nothing: the loss
// signal speaks for the link, as it would for a followed node. The
// recipe's own check (NewHold) comes after, and refuses an ended node.
func (n *Node) Confirm(ctx context.Context) {
	if n.settled.Load() {
		return // followed, and known as a follower from the grant knows it
	}
	// The loss signal first, as a watcher would have heard it: a node
	// gone with its session was lost to the session, not deleted by
	// someone else, and a node already ended needs no read (nor a wait on
	// a link that is down).
	if n.heed(); n.ended.Load() || !linkUp(n.client.State()) {
		// A link that is down cannot answer: the loss signal speaks for
		// it, as for a followed node, and a nested acquire is not held
		// up for the caller's whole deadline on a read that fails.
		n.watch()
		return
	}
	if _, st, err := n.client.Get(ctx, n.path); errors.Is(err, zk.ErrNoNode) ||
		(err == nil && (st.EphemeralOwner != n.session.ID || st.Czxid != n.token)) {
		// The session may have ended during the read: a new session's
		// answer comes after the old one's signal, which then stands.
		n.heed()
		n.finish(zkrecipes.ErrNodeDeleted)
	} else if err == nil {
		n.settled.Store(true) // ours as of the read; followed from now on
	}
	n.watch()
}

// linkUp says whether a read can be answered now.
func linkUp(s conn.State) bool {
	return s == conn.StateConnected || s == conn.StateReconnected || s == conn.StateReadOnly
}

// halt stops the node's watchers, or keeps them from ever starting; its
// caller waits for them with n.wg.
func (n *Node) halt() {
	n.mu.Lock()
	n.watching.Store(true)
	cancel := n.cancel
	n.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if n.unwatch != nil {
		n.unwatch()
	}
}

// heed ends the node if its loss signal has fired: what a watcher would
// have done, for a node nobody has waited on yet (see watch). The reason
// is the one the watcher would have given: under the standard policy the
// signal fires when the link is in doubt, whatever came after (told adds
// the session's loss).
func (n *Node) heed() {
	if n.ended.Load() || !isClosed(n.signal) {
		return
	}
	if n.signal == n.session.Lost {
		n.finish(zkrecipes.ErrSessionLost)
	} else {
		n.finish(zkrecipes.ErrSuspended)
	}
}

// run starts one more of the node's watchers (see start).
func (n *Node) run(f func()) {
	n.wg.Add(1)
	n.start(f)
}

// start runs f, a watcher counted in n.wg already, on a worker of the
// node's client. The client refuses only once its Close has begun, and
// Close has then ended the node already (OnClose): nothing is left to
// watch.
func (n *Node) start(f func()) {
	if !n.client.Go(f) { // f calls n.wg.Done
		n.wg.Done()
	}
}

// watchSignal turns the session's loss signal into the node's own. It
// never does network calls itself, so nothing can delay the signal.
//
// changed, if not nil, is a child watch on the node's directory set after
// the node was made (Grant.Changed): the node cannot be deleted, or
// deleted and made again, without firing it, so the node's own watch
// (watchNode, a goroutine of its own since it makes network calls) starts
// only when it fires.
func (n *Node) watchSignal(changed <-chan zk.Event) {
	defer n.wg.Done()
	for {
		select {
		case <-n.signal:
			n.finish(n.lossCause())
			return
		case <-changed: // nil once the node's watch runs: never ready
			changed = nil
			n.run(n.watchNode) // this goroutine's count keeps the group above zero
		case <-n.life.Done():
			return
		}
	}
}

// watchNode follows the node itself until release: deleted, or owned by
// another session, means lost (Curator would not notice: the next waiter is
// granted while this holder carries on). A revocable node's data turning
// into __REVOKE__ closes Revoked.
//
// It starts at the grant, or when the directory's child watch fires (see
// watchSignal): an uncontended hold then costs no request of its own; in a
// busy queue the directory changes soon and the node's watch is set then,
// a round trip behind. Not after a pause: a deletion in the pause would go
// unseen while the next waiter holds, or for ever if the hold ended first.
func (n *Node) watchNode() {
	defer n.wg.Done()
	ctx := n.life
	for {
		data, st, ch, err := n.client.GetW(ctx, n.path)
		switch n.judge(ctx, data, st, err) {
		case lookEnded:
			return
		case lookAgain:
			continue
		}
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNodeDeleted && !n.client.Closed() {
				n.finish(zkrecipes.ErrNodeDeleted)
				return
			}
			// Data changed, or the watch ended with the link: look again.
		case <-ctx.Done():
			return
		}
	}
}

// lookOutcome is what one read of a followed node says.
type lookOutcome uint8

const (
	lookEnded    lookOutcome = iota // the node ended, or following it must stop
	lookAgain                       // the link was down and is back under the same session
	lookWatching                    // the node is ours: wait for its watch
)

// judge is one turn of following the node, given what a watched read of
// it (under ctx, the node's life) returned: gone, or not the node
// granted, ends the node; a revocation request closes Revoked. Both a Node
// following itself (watchNode) and a Watcher (look) judge by it.
func (n *Node) judge(ctx context.Context, data []byte, st *zk.Stat, err error) lookOutcome {
	switch {
	case n.client.Closed() && ctx.Err() == nil:
		// Its client deleted the node (a client over a shared
		// connection does at Close) or can no longer follow it.
		n.finish(errClientClosed)
		return lookEnded
	case errors.Is(err, zk.ErrNoNode):
		n.finish(zkrecipes.ErrNodeDeleted)
		return lookEnded
	case err != nil:
		// Closing, released, or the link is down: in the last case the
		// loss signal covers it (standard policy) or the session may
		// come back (session-only): look again once connected.
		if ctx.Err() != nil || n.client.Closed() {
			return lookEnded
		}
		if _, werr := n.client.WaitConnected(ctx); werr != nil {
			return lookEnded
		}
		if n.client.Session().ID != n.session.ID {
			return lookEnded // a new session: the loss signal says so
		}
		return lookAgain
	case st.EphemeralOwner != n.session.ID || st.Czxid != n.token:
		// Another session's node, or a node made again at our path:
		// either way not the node we were granted.
		n.finish(zkrecipes.ErrNodeDeleted)
		return lookEnded
	}
	n.settled.Store(true)
	if n.revocable && string(data) == RevokeMessage {
		n.mu.Lock()
		if !isClosed(n.revoked) {
			close(n.revoked)
		}
		n.mu.Unlock()
	}
	return lookWatching
}
