package persistent

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
)

// notKeeping is the check of Set and Wait after Runtime.Check: a keeper
// at work. Not Runtime.Ready: a call made while a Start is making the
// node goes on, and waits with that Start.
func (n *Node) notKeeping() error {
	n.mu.Lock()
	keeping := n.keeping
	n.mu.Unlock()
	if !keeping {
		return n.err(zkrecipes.ErrNotStarted)
	}
	return nil
}

// wait waits until the node is in place with data of generation gen or
// later.
func (n *Node) wait(ctx context.Context, gen uint64) error {
	for {
		n.mu.Lock()
		st, written, ch := n.status, n.written, n.changed
		n.mu.Unlock()
		if n.rt.Closed() {
			return zkrecipes.ErrClosed
		}
		if st.InPlace && written >= gen {
			return nil
		}
		if errors.Is(st.Err, zkrecipes.ErrUnsupported) {
			// The servers refuse the node's kind: no wait makes it.
			return st.Err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			n.mu.Lock()
			st = n.status
			n.mu.Unlock()
			if errors.Is(st.Err, ErrOtherOwner) {
				// The one cause a caller can act on: say it, not only the
				// deadline.
				return fmt.Errorf("%w: %w", ctx.Err(), st.Err)
			}
			return ctx.Err()
		case <-n.client.Done():
			return engine.Err(zkrecipes.ErrClosed, true)
		}
	}
}

// Wait waits until the node is in place with the latest data, or ctx
// ends. It fails with zkrecipes.ErrNotStarted before Start and with
// zkrecipes.ErrClosed after Close.
func (n *Node) Wait(ctx context.Context) error {
	if err := n.usable(); err != nil {
		return err
	}
	if err := n.rt.Check(ctx); err != nil {
		return err
	}
	if err := n.notKeeping(); err != nil {
		return err
	}
	n.mu.Lock()
	gen := n.gen
	n.mu.Unlock()
	return n.err(n.wait(ctx, gen))
}

// Set makes data the node's data, now and whenever it is made again, as
// Curator's setData, and returns once it is on the node in place, or with
// ctx's error (the data is kept all the same, and written as soon as the
// node is in place again). Data too large for the node is refused before
// anything changes.
func (n *Node) Set(ctx context.Context, data []byte) error {
	if err := n.usable(); err != nil {
		return err
	}
	if err := n.rt.Check(ctx); err != nil {
		return err
	}
	if err := n.check("set", data); err != nil {
		return n.err(err)
	}
	if err := n.notKeeping(); err != nil {
		return err
	}
	n.mu.Lock()
	n.data = bytes.Clone(data)
	if n.data == nil {
		n.data = []byte{}
	}
	n.gen++
	gen := n.gen
	if n.status.InPlace {
		n.setStatusLocked(Status{Path: n.actual, Err: fmt.Errorf("%w: writing new data", ErrNotInPlace)}, n.link)
	}
	n.mu.Unlock()
	n.poke()
	return n.err(n.wait(ctx, gen))
}

func (n *Node) poke() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// Status returns where the node stands now; it sends nothing.
func (n *Node) Status() Status {
	if err := n.usable(); err != nil {
		return Status{Err: err}
	}
	n.mu.Lock()
	st, link := n.status, n.link
	n.mu.Unlock()
	return n.current(st, link)
}

// current is st, unless the link it was checked over can no longer be
// trusted under the client's error policy.
func (n *Node) current(st Status, link conn.Session) Status {
	if !st.InPlace {
		return st
	}
	// CheckTrust, as for a hold: the link's signal, and its proof of life
	// (a process thawed after a long freeze finds it stale at once).
	reason := n.client.CheckTrust(link)
	if reason == nil {
		return st
	}
	return Status{Path: st.Path, Err: fmt.Errorf("%w: %w", ErrNotInPlace, reason)}
}

// Err is nil while the node is in place (see Status.InPlace); otherwise
// it wraps ErrNotInPlace and the reason. After Close it is
// zkrecipes.ErrClosed.
func (n *Node) Err() error {
	if err := n.usable(); err != nil {
		return err
	}
	if n.rt.Closed() {
		return n.err(zkrecipes.ErrClosed)
	}
	return n.err(n.Status().Err)
}

// Subscribe returns a subscription to the node's Status from now on,
// beginning with the current one: a new value each time the node is made,
// goes, or stops being trusted (the link dropped, the session was lost).
// Its channel is closed after Close of the Node, once the values queued
// before have been taken, or at once by Close of the subscription. A reader that falls more than framework.DefaultBound
// changes behind is told, never skipped silently: the subscription ends,
// its Err wrapping zkrecipes.ErrFellBehind (docs/vocabulary.md).
func (n *Node) Subscribe() *framework.Subscription[Status] {
	if n.usable() != nil {
		var f framework.Feed[Status]
		f.End(nil)
		return f.Subscribe()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.feed.SubscribeWith(n.current(n.status, n.link))
}

// setStatusLocked records st, checked over link, and publishes it if it
// differs from the last.
func (n *Node) setStatusLocked(st Status, link conn.Session) {
	n.link = link
	if st.same(n.status) {
		return
	}
	n.status = st
	n.feed.Publish(st)
	n.wakeLocked()
}

// wakeLocked wakes every wait under way, to look again.
func (n *Node) wakeLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// notInPlace records that the node is not in place, for reason.
func (n *Node) notInPlace(reason error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.rt.Closed() {
		return
	}
	n.setStatusLocked(Status{Path: n.actual, Err: fmt.Errorf("%w: %w", ErrNotInPlace, reason)}, n.link)
}
