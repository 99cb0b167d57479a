package session

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
)

// The state machine: go-zookeeper's events in, conn.Events out, the
// simulated expiry, and which sessions go-zookeeper may have back.

// mayResume says whether go-zookeeper may ask to resume session id: not if
// it was declared lost.
func (c *Conn) mayResume(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return id != c.dead
}

// admit decides, before go-zookeeper reads the handshake, whether it may
// have the session the server gave. It is ordered with the simulated
// expiry by c.mu: a session the expiry declared lost first is refused (its
// connect request went out before), and an expiry after a resume waits for
// the event of that resume.
func (c *Conn) admit(h handshake) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.sessionID != 0 && h.sessionID == c.dead {
		c.log.Warn(refusedResume, "session", sessionHex(h.sessionID))
		return false
	}
	if h.sessionID != 0 && h.sessionID == c.epoch.id && !c.epoch.isLost {
		// admit runs on go-zookeeper's goroutine, as onEvent does: the
		// HasSession that follows gets the next number.
		c.inboxMu.Lock()
		c.resumed, c.resumeAfter = true, c.queued
		c.inboxMu.Unlock()
	}
	c.lastHandshake.Store(&h)
	return true
}

// run owns the state machine: it applies queued events in order and fires
// the simulated expiry.
func (c *Conn) run() {
	defer c.wg.Done()
	var expiry *time.Timer
	var expiryC <-chan time.Time
	stopExpiry := func() {
		if expiry != nil {
			expiry.Stop()
			expiry, expiryC = nil, nil
		}
	}
	defer stopExpiry()
	for {
		select {
		case <-c.quit:
			return
		case <-expiryC:
			expiry, expiryC = nil, nil
			c.expire(time.Now())
		case <-c.inboxSignal:
			c.inboxMu.Lock()
			batch := c.inbox
			c.inbox = nil
			c.inboxMu.Unlock()
			for _, ev := range batch {
				switch c.apply(ev) {
				case startExpiry:
					stopExpiry()
					if d := c.expiryDelay(); d > 0 {
						expiry = time.NewTimer(d)
						expiryC = expiry.C
					}
				case cancelExpiry:
					stopExpiry()
				}
			}
		}
	}
}

// expire is the simulated expiry's timer firing: the session is lost
// unless a handshake resumed it meanwhile (see admit).
func (c *Conn) expire(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.state != conn.StateSuspended:
	case c.resumed:
		c.expiryDue = true
	default:
		c.loseLocked(at, true, simulatedExpiry)
	}
}

// refusedResume is logged when a server resumed a session after the
// client declared it lost: the answer is not given to go-zookeeper.
const refusedResume = "zookeeper resumed a session this client had declared lost; link dropped, a new session follows"

// simulatedExpiry is the reason logged when the client gives the session up
// on its own.
const simulatedExpiry = "suspended for the session timeout (simulated expiry)"

type timerAction int

const (
	keepExpiry timerAction = iota
	startExpiry
	cancelExpiry
)

func (c *Conn) expiryDelay() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch.timeout * time.Duration(c.cfg.ExpiryPercent) / 100
}

// apply moves the state machine for one go-zookeeper event.
func (c *Conn) apply(ev rawEvent) timerAction {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == conn.StateClosed {
		return cancelExpiry
	}
	due := false
	if c.resumed && ev.seq > c.resumeAfter {
		// The first event after an admitted resume: its HasSession, or
		// (only if go-zookeeper could not read the answer it was
		// admitted from) the failure of its link.
		due = c.expiryDue
		c.resumed, c.expiryDue = false, false
	}
	switch ev.state {
	case zk.StateHasSession:
		c.sessionLocked(ev)
		return cancelExpiry
	case zk.StateDisconnected, zk.StateAuthFailed:
		if c.state.IsConnected() {
			// Observers first: a hold woken by the channel may end its
			// owner's work at once, and whoever subscribed to the states
			// must have this change queued by then.
			c.transitionLocked(conn.Event{State: conn.StateSuspended, SessionID: c.epoch.id, Time: ev.at})
			close(c.epoch.suspended)
			return startExpiry
		}
		if due {
			c.loseLocked(ev.at, true, simulatedExpiry)
			return cancelExpiry
		}
	case zk.StateExpired:
		if c.state != conn.StateLost && c.state != 0 {
			c.loseLocked(ev.at, false, "expired")
			return cancelExpiry
		}
	}
	return keepExpiry
}

func (c *Conn) sessionLocked(ev rawEvent) {
	var h handshake
	if ev.hs != nil {
		h = *ev.hs
	}
	if h.sessionID == 0 {
		h.sessionID = c.zk.SessionID()
	}
	if h.sessionID == c.dead {
		// admit refuses such a handshake, so this is never reached; if it
		// were, the session stays lost: its link is dropped, and the next
		// connect request asks for it with a wrong password.
		c.log.Error("zookeeper resumed a session declared lost; dropping its link", "session", sessionHex(h.sessionID))
		if l := c.link.Load(); l != nil {
			_ = l.Conn.Close()
		}
		return
	}
	timeout := time.Duration(h.timeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = c.cfg.SessionTimeout
	}
	st := conn.StateReconnected
	if h.readOnly {
		st = conn.StateReadOnly
	}
	out := conn.Event{State: st, SessionID: h.sessionID, Time: ev.at}
	switch {
	case c.state == 0:
		if !h.readOnly {
			out.State = conn.StateConnected
		}
		out.NewSession = true
		c.epoch = newEpoch(h.sessionID, timeout)
		close(c.connected)
	case c.state == conn.StateLost || h.sessionID != c.epoch.id:
		if !c.epoch.isLost {
			// A new session without an Expired event first: the old one is
			// gone all the same.
			c.loseLocked(ev.at, false, "replaced by a new session")
		}
		out.NewSession = true
		c.epoch = newEpoch(h.sessionID, timeout)
	case c.state == conn.StateSuspended:
		c.epoch.suspended = make(chan struct{})
		c.epoch.timeout = timeout
	default:
		return // already connected on this session
	}
	c.transitionLocked(out)
}

// loseLocked ends the current epoch; reason is for the log.
func (c *Conn) loseLocked(at time.Time, simulated bool, reason string) {
	e := c.epoch
	if e.isLost {
		return
	}
	c.log.Warn("zookeeper session lost", "session", sessionHex(e.id), "reason", reason)
	c.dead = e.id
	// Observers before the channels, as for a suspension (apply).
	c.transitionLocked(conn.Event{State: conn.StateLost, SessionID: e.id, Simulated: simulated, Time: at})
	e.end()
}

func (c *Conn) transitionLocked(ev conn.Event) {
	c.state, c.last = ev.State, ev
	close(c.changed)
	c.changed = make(chan struct{})
	c.logTransition(ev)
	for f := range c.observers {
		(*f)(ev)
	}
}

// logTransition logs a state change: Warn when what the session holds is
// in doubt, Info when it is back; a loss was logged with its reason.
func (c *Conn) logTransition(ev conn.Event) {
	session := sessionHex(ev.SessionID)
	switch {
	case ev.State == conn.StateSuspended:
		c.log.Warn("zookeeper connection suspended: link down, session in doubt", "session", session)
	case ev.State == conn.StateLost:
		c.log.Debug("zookeeper connection state", "state", ev.State.String(), "session", session)
	case ev.NewSession:
		c.log.Info("zookeeper session established", "state", ev.State.String(), "session", session)
	default:
		c.log.Info("zookeeper connection reconnected: same session", "state", ev.State.String(), "session", session)
	}
}

// sessionHex is how every log line writes a session id (attribute
// "session").
func sessionHex(id int64) string { return fmt.Sprintf("0x%x", id) }

// end closes the epoch's channels: nothing of it is trusted any more.
func (e *epoch) end() {
	e.isLost = true
	select {
	case <-e.suspended:
	default:
		close(e.suspended)
	}
	close(e.lost)
}

func newEpoch(id int64, timeout time.Duration) *epoch {
	return &epoch{id: id, timeout: timeout, suspended: make(chan struct{}), lost: make(chan struct{})}
}

// closedEpoch stands for "no session yet": everything about it is untrusted.
func closedEpoch() *epoch {
	e := newEpoch(0, 0)
	e.end()
	return e
}
