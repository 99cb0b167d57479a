package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
)

// followSession turns the client's session states into staleness and
// resyncs: Suspended and Lost make the view stale and call for a resync
// once connected; Lost also forgets the watches, which went with the
// session.
func (c *Cache) followSession(life context.Context) {
	sub := c.client.Subscribe()
	defer func() { sub.Close() }()
	first := true
	for {
		select {
		case ev, ok := <-sub.Changes():
			if !ok && errors.Is(sub.Err(), zkrecipes.ErrFellBehind) {
				// Told it fell behind: the state as it stands comes
				// first again, and stands for the changes missed.
				sub.Close()
				sub = c.client.Subscribe()
				first = false
				continue
			}
			if !ok {
				return
			}
			if first {
				first = false
				if ev.State.IsConnected() {
					// The state as it stands, connected: the first read
					// is on its way. A link down already is a change.
					continue
				}
			}
			switch ev.State {
			case conn.StateSuspended:
				c.goStale(zkrecipes.ErrSuspended, false)
			case conn.StateLost:
				c.goStale(zkrecipes.ErrSessionLost, true)
			case conn.StateConnected, conn.StateReconnected, conn.StateReadOnly:
				if ev.NewSession {
					c.in.mu.Lock()
					c.in.epoch++
					c.in.mu.Unlock()
				}
				c.in.markResync()
			case conn.StateClosed:
				return
			}
		case <-life.Done():
			return
		}
	}
}

// goStale makes the view stale for reason, and says so to the
// subscriptions if it was current or the reason is graver; it calls for a
// resync, after forgetting the watches if the session that held them is
// gone (their goroutines end with the next epoch's start).
//
// The resync is called for under mu, with the Stale: goCurrent, which
// decides under mu too, then either comes before the Stale or sees the
// resync to do, and a Current never follows the Stale of a gap not read.
func (c *Cache) goStale(reason error, forgetWatches bool) {
	err := fmt.Errorf("%w: %w", zkrecipes.ErrStale, reason)
	c.mu.Lock()
	defer c.mu.Unlock()
	if forgetWatches {
		c.in.mu.Lock()
		c.in.epoch++
		c.in.mu.Unlock()
	}
	c.in.markResync()
	if c.stale != nil && (errors.Is(c.stale, reason) || errors.Is(c.stale, zkrecipes.ErrSessionLost)) {
		return
	}
	c.stale = err
	c.feed.Publish(Event{Type: Stale, Err: err})
}

// goCurrent makes the view current, and says so if it was stale, unless
// there is something left to read: a gap (a resync not taken yet) or a
// change, or the link is down. The engine calls it when it has nothing
// left to read; it decides under mu, as goStale does (see there).
func (c *Cache) goCurrent() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stale == nil {
		return
	}
	c.in.mu.Lock()
	quiet := !c.in.resync && len(c.in.dirty[kindData]) == 0 && len(c.in.dirty[kindKids]) == 0
	c.in.mu.Unlock()
	if !quiet || !c.client.State().IsConnected() {
		return
	}
	c.stale = nil
	c.feed.Publish(Event{Type: Current})
	select {
	case <-c.loaded:
	default:
		close(c.loaded)
	}
}
