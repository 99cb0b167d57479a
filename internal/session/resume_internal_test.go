package session

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/conn"
)

// suspendedConn is a Conn whose session 7 is suspended, as run leaves it.
func suspendedConn() *Conn {
	c := &Conn{log: slog.New(slog.NewTextHandler(io.Discard, nil)), changed: make(chan struct{}), epoch: newEpoch(7, time.Second)}
	c.state = conn.StateSuspended
	return c
}

// report is go-zookeeper reporting a session state: the event is numbered
// and queued as onEvent does, not applied yet.
func report(c *Conn, st zk.State) {
	c.onEvent(zk.Event{Type: zk.EventSession, State: st})
}

// shake is go-zookeeper reading a connect answer for session id (the
// sniffer asks admit first), and reporting HasSession if it may have it.
func shake(c *Conn, id int64) bool {
	if !c.admit(handshake{timeoutMs: 1000, sessionID: id}) {
		return false
	}
	report(c, zk.StateHasSession)
	return true
}

// applyQueued is run applying what is queued, in order.
func applyQueued(c *Conn) {
	c.inboxMu.Lock()
	batch := c.inbox
	c.inbox = nil
	c.inboxMu.Unlock()
	for _, ev := range batch {
		c.apply(ev)
	}
}

// The simulated expiry and a handshake that resumes the session race: the
// server may resume it (go-zookeeper's connect request went out first)
// while the timer declares it lost. Whichever c.mu orders first decides,
// and the other follows it; a session declared lost is never adopted.
func TestExpiryAndResumeAreOrdered(t *testing.T) {
	t.Run("expiry first: the resume is refused and never asked again", func(t *testing.T) {
		c := suspendedConn()
		lost := c.epoch.lost
		c.expire(time.Now())
		require.Equal(t, conn.StateLost, c.state)
		assert.True(t, closed(lost))
		assert.False(t, shake(c, 7), "the server resumed a session declared lost")
		assert.False(t, c.mayResume(7))
		assert.True(t, c.mayResume(8))
		assert.True(t, shake(c, 8), "a new session is taken")
		applyQueued(c)
		assert.Equal(t, conn.StateReconnected, c.state)
		assert.True(t, c.last.NewSession)
		assert.Equal(t, int64(8), c.epoch.id)
	})
	// Each order in which run may see the expiry, the resume and the
	// disconnect of an earlier failed attempt (queued before the resume):
	// the resume wins, the session lives on.
	for name, steps := range map[string][]string{
		"resume, expiry, its event":             {"resume", "expire", "apply"},
		"stale disconnect applied after expiry": {"disconnect", "resume", "expire", "apply"},
		"stale disconnect applied, then expiry": {"disconnect", "resume", "applyOne", "expire", "apply"},
	} {
		t.Run(name, func(t *testing.T) {
			c := suspendedConn()
			lost := c.epoch.lost
			for _, s := range steps {
				switch s {
				case "disconnect":
					report(c, zk.StateDisconnected)
				case "resume":
					require.True(t, shake(c, 7))
				case "expire":
					c.expire(time.Now())
				case "applyOne":
					c.inboxMu.Lock()
					ev := c.inbox[0]
					c.inbox = c.inbox[1:]
					c.inboxMu.Unlock()
					c.apply(ev)
				case "apply":
					applyQueued(c)
				}
			}
			assert.Equal(t, conn.StateReconnected, c.state)
			assert.False(t, c.last.NewSession)
			assert.Equal(t, int64(7), c.epoch.id)
			assert.False(t, closed(lost), "the session lives on")
			assert.True(t, c.mayResume(7))
		})
	}
	t.Run("resume admitted but its answer unread: the link fails, the expiry takes effect", func(t *testing.T) {
		c := suspendedConn()
		lost := c.epoch.lost
		require.True(t, c.admit(handshake{timeoutMs: 1000, sessionID: 7}))
		c.expire(time.Now())
		assert.Equal(t, conn.StateSuspended, c.state, "the expiry waits for the resume's outcome")
		report(c, zk.StateDisconnected)
		applyQueued(c)
		assert.Equal(t, conn.StateLost, c.state)
		assert.True(t, closed(lost))
		assert.False(t, c.mayResume(7))
	})
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Whoever observes the states hears of a suspension or a loss before the
// session's channels close: a hold woken by them may end its owner's work
// at once (zkr then stops watching the link), and the change must be
// queued for every subscriber by then, or it is never told.
func TestObserversHearBeforeTheChannelsClose(t *testing.T) {
	connected := func() *Conn {
		c := suspendedConn()
		c.state = conn.StateConnected
		return c
	}
	watch := func(c *Conn) *[]string {
		var seen []string
		e := c.epoch
		c.Observe(func(ev conn.Event) {
			seen = append(seen, fmt.Sprintf("%v suspended=%v lost=%v", ev.State, closed(e.suspended), closed(e.lost)))
		})
		return &seen
	}
	t.Run("suspended", func(t *testing.T) {
		c := connected()
		seen := watch(c)
		report(c, zk.StateDisconnected)
		applyQueued(c)
		assert.Equal(t, []string{"Suspended suspended=false lost=false"}, *seen)
		assert.True(t, closed(c.epoch.suspended))
	})
	t.Run("lost", func(t *testing.T) {
		c := suspendedConn()
		close(c.epoch.suspended)
		seen := watch(c)
		report(c, zk.StateExpired)
		applyQueued(c)
		assert.Equal(t, []string{"Lost suspended=true lost=false"}, *seen)
		assert.True(t, closed(c.epoch.lost))
	})
}
