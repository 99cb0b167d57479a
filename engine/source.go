package engine

import (
	"context"
	"log/slog"
	"slices"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// A Node is the hold.Source of its holds.
var _ hold.Source = (*Node)(nil)

// NewHold opens one acquisition of n (hold.New): release is the recipe's
// bookkeeping for it, run at most once, from hold.Hold.Release (the recipe
// decides there whether the node's last acquisition is given back, and
// then releases the Node). If n has lost trust already, NewHold returns
// nil and an error wrapping zkrecipes.ErrHoldLost and why: no Hold is
// handed out under a signal that has fired. It checks the link's proof of
// life first (framework.Client.CheckTrust): a node whose link has gone
// without it past the loss signal's bound (a process thawed after a long
// freeze) ends there, with zkrecipes.ErrSuspended, instead of being
// handed out.
func (n *Node) NewHold(release func(*hold.Hold) error) (*hold.Hold, error) {
	return hold.New(n, release)
}

// Session is the session that owns the node, as the grant was decided
// under (Grant.Session).
func (n *Node) Session() conn.Session { return n.session }

// Client is the client the node was granted through.
func (n *Node) Client() *framework.Client { return n.client }

// Revoked is closed when another process asks the holder to release with
// Curator's revocation protocol (WithRevocable); else it never closes.
func (n *Node) Revoked() <-chan struct{} { return n.revoked }

// Recipe is the recipe the node's errors name, and its path (WithRecipe).
func (n *Node) Recipe() (name, path string) { return n.recipe, n.recipePath }

// Check is Err without the recipe's name: it checks that the link still
// has proof of life (framework.Client.CheckTrust), ending the node if not,
// and says why the node can no longer be trusted (nil while it is).
func (n *Node) Check() error { return n.errNow() }

// Loss is Check without the check of the link: why the node can no longer
// be trusted, as it should be told now.
func (n *Node) Loss() error {
	n.heed()
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.told(n.err)
}

// Attach is hold.Source's: it checks the link (Check) and then, under the
// node's lock, refuses h if the node has ended (returning why), or
// remembers h, to end it with the node. The node's first hold is counted
// and logged as granted. hold.New calls it.
func (n *Node) Attach(h *hold.Hold, end func(*hold.Hold, error)) error {
	n.vouch()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.err != nil {
		return n.told(n.err)
	}
	n.holds = append(n.holds, attached{h, end})
	if !n.given {
		n.given = true
		n.metered = true
		n.meter.HoldStarted()
		if log := n.client.Logger(); log.Enabled(context.Background(), slog.LevelDebug) {
			log.Debug("zookeeper hold granted", "path", n.path, "session", sessionHex(n.session.ID), "token", n.token)
		}
	}
	return nil
}

// Detach forgets h, an acquisition whose release has begun: the node's
// end leaves it alone from now on.
func (n *Node) Detach(h *hold.Hold) {
	// A loss signal that fired while nobody waited (see Node.Done) ends h
	// now, while it is attached: its Release says it was lost.
	n.heed()
	n.mu.Lock()
	defer n.mu.Unlock()
	// From the newest: nested acquisitions are given back newest first,
	// so a deep reentrant holder's releases stay linear in all.
	for i := len(n.holds) - 1; i >= 0; i-- {
		if n.holds[i].h == h {
			n.holds = slices.Delete(n.holds, i, i+1)
			return
		}
	}
}

// End marks the node untrusted with err (the first reason stands), without
// deleting it: every open hold's signal fires. Fenced calls it when the
// node was found gone. A nil err says no reason, and does nothing.
func (n *Node) End(err error) {
	if err != nil {
		n.finish(err)
	}
}
