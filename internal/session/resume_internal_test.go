package session

import (
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

func hasSession(id int64) rawEvent {
	return rawEvent{state: zk.StateHasSession, hs: &handshake{timeoutMs: 1000, sessionID: id}, at: time.Now()}
}

// The simulated expiry and a handshake that resumes the session race: the
// server may resume it (go-zookeeper's connect request went out first)
// while the timer declares it lost. Whichever c.mu orders first decides,
// and the other follows it.
func TestExpiryAndResumeAreOrdered(t *testing.T) {
	t.Run("expiry first: the resume is refused and never asked again", func(t *testing.T) {
		c := suspendedConn()
		lost := c.epoch.lost
		c.expire(time.Now())
		require.Equal(t, conn.StateLost, c.state)
		assert.True(t, closed(lost))
		assert.False(t, c.admit(handshake{timeoutMs: 1000, sessionID: 7}), "the server resumed a session declared lost")
		assert.False(t, c.mayResume(7))
		assert.True(t, c.mayResume(8))
		assert.True(t, c.admit(handshake{timeoutMs: 1000, sessionID: 8}), "a new session is taken")
		c.apply(hasSession(8))
		assert.Equal(t, conn.StateReconnected, c.state)
		assert.True(t, c.last.NewSession)
		assert.Equal(t, int64(8), c.epoch.id)
	})
	t.Run("resume first: the expiry gives way to it", func(t *testing.T) {
		c := suspendedConn()
		lost := c.epoch.lost
		require.True(t, c.admit(handshake{timeoutMs: 1000, sessionID: 7}))
		c.expire(time.Now())
		assert.Equal(t, conn.StateSuspended, c.state)
		c.apply(hasSession(7))
		assert.Equal(t, conn.StateReconnected, c.state)
		assert.False(t, c.last.NewSession)
		assert.False(t, closed(lost), "the session lives on")
		assert.True(t, c.mayResume(7))
	})
	t.Run("resume first, then its link fails: the expiry takes effect", func(t *testing.T) {
		c := suspendedConn()
		lost := c.epoch.lost
		require.True(t, c.admit(handshake{timeoutMs: 1000, sessionID: 7}))
		c.expire(time.Now())
		c.apply(rawEvent{state: zk.StateDisconnected, at: time.Now()})
		assert.Equal(t, conn.StateLost, c.state)
		assert.True(t, closed(lost))
		assert.False(t, c.mayResume(7))
	})
	t.Run("resume first, its link fails before the expiry: the timer still decides", func(t *testing.T) {
		c := suspendedConn()
		require.True(t, c.admit(handshake{timeoutMs: 1000, sessionID: 7}))
		c.apply(rawEvent{state: zk.StateDisconnected, at: time.Now()})
		assert.Equal(t, conn.StateSuspended, c.state)
		c.expire(time.Now())
		assert.Equal(t, conn.StateLost, c.state)
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
