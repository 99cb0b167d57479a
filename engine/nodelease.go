package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Lease makes the node end by itself d from now, unless it ends first or
// is extended: its holds' signals fire with zkrecipes.ErrLeaseExpired and its node is
// deleted, whether or not the holder ever releases it. A node that has a
// lease already keeps the later of the two ends (a reentrant acquire
// renews it, as Redisson's lock(leaseTime) does). Call it before the
// node's first Hold is handed out; on a node that has ended it does
// nothing. d must be positive, else it returns an error wrapping
// zkrecipes.ErrInvalidArgument and changes nothing.
func (n *Node) Lease(d time.Duration) error {
	if d <= 0 {
		return n.named(fmt.Errorf("lease %s: %w: %v is not positive", n.path, zkrecipes.ErrInvalidArgument, d))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.err != nil || n.releasing {
		return nil
	}
	n.pushLocked(d)
	return nil
}

// pushLocked moves the lease's end to now+d if that is later.
func (n *Node) pushLocked(d time.Duration) {
	end := time.Now().Add(d)
	if !n.deadline.IsZero() && !end.After(n.deadline) {
		return
	}
	n.deadline = end
	if n.timer == nil {
		n.timer = time.AfterFunc(d, n.expire)
	} else {
		// A callback already on its way finds the new end later than now
		// and returns; the reset one comes at the new end.
		n.timer.Reset(d)
	}
}

// expire is the lease's end: the node stops being trusted (the first reason
// wins: a hold lost before says why it was lost) and its node is deleted in
// the background, only while it is still our session's (a lost hold's node
// may be gone or belong to a session being replaced). It deletes even a
// node lost before, since a holder that forgets to release must not keep
// others out for as long as its session lives: that is what a lease is
// for. It never blocks: the client's background deleter does the work and
// Client.Drain waits for it.
func (n *Node) expire() {
	n.heed() // a loss signal that fired unwatched came first: its reason stands
	n.mu.Lock()
	// Released (every acquisition given back: the release owns the node,
	// even if it has not reached endLease yet), or extended since the
	// timer was set.
	if n.releasing || n.expired || (n.given && len(n.holds) == 0) || n.deadline.IsZero() || time.Now().Before(n.deadline) {
		n.mu.Unlock()
		return
	}
	n.expired = true
	// Ended in the same step: an Extend or a reentrant acquire that comes
	// after this sees the hold lost, never a lease that still seems to run.
	first := n.endLocked(zkrecipes.ErrLeaseExpired)
	n.mu.Unlock()
	if first {
		n.report(zkrecipes.ErrLeaseExpired)
	}
	// Nothing of a forgotten hold stays behind: its watchers end now (its
	// signal has fired), not at a Release that may never come, and the
	// recipe forgets it (outside n.mu: recipes lock themselves first).
	n.unhook()
	n.halt()
	if f := n.expireHook(); f != nil {
		f()
	}
	if err := n.client.Delete(context.Background(), n.path, -1, framework.OwnedBy(n.session.ID), framework.Deferred()); err != nil && !errors.Is(err, zkrecipes.ErrClosed) {
		n.client.Logger().Warn("zookeeper hold: deleting the node of an expired lease failed",
			"path", n.path, "session", sessionHex(n.session.ID), "err", err)
	}
}

// endLease stops the lease for a release (or the client's Close, or
// Forget), and reports whether its end came first and deleted the node.
func (n *Node) endLease() (expired bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.releasing = true
	if n.timer != nil {
		n.timer.Stop()
	}
	return n.expired
}

// Extend moves the end of the node's lease to d from now, if that is
// later than it is (hold.Hold.Extend, for every acquisition of the node):
// it fails with zkrecipes.ErrNoLeaseTime for a node without a lease, with
// zkrecipes.ErrReleased once it is released, with an error wrapping
// zkrecipes.ErrHoldLost and the reason once it has ended otherwise, and
// with zkrecipes.ErrInvalidArgument for a d that is not positive. Its
// errors do not name the node: the hold's do.
func (n *Node) Extend(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: %v is not positive", zkrecipes.ErrInvalidArgument, d)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.err != nil && errors.Is(n.err, zkrecipes.ErrReleased):
		return n.err
	case n.err != nil:
		return fmt.Errorf("%w: %w", zkrecipes.ErrHoldLost, n.told(n.err))
	case n.releasing:
		return zkrecipes.ErrReleased
	case n.deadline.IsZero():
		return zkrecipes.ErrNoLeaseTime
	}
	n.pushLocked(d)
	return nil
}

// Expiry is when the node's lease ends, and false for a node without a
// lease.
func (n *Node) Expiry() (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.deadline, !n.deadline.IsZero()
}

// OnExpire sets f, run once if the node's lease ends it (not if it is
// released first), so that the recipe can forget it: its holder may never
// release it. f runs without the node's lock held.
func (n *Node) OnExpire(f func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.onExpire = f
}

func (n *Node) expireHook() func() {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.onExpire
}
