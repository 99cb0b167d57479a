package conn

import "github.com/zkrecipes/zkrecipes/internal/mailbox"

// Subscription delivers a Conn's state changes in order. Its queue is
// unbounded, so a slow reader delays only itself and never loses Lost or
// Reconnected. Repeated Suspended events cannot occur: the state machine only
// reports a change.
type Subscription struct {
	c  *Conn
	mb *mailbox.Mailbox[Event]
}

func newSubscription(c *Conn) *Subscription {
	return &Subscription{c: c, mb: mailbox.New[Event]()}
}

// Events returns the channel of state changes. It is closed after Close of
// the subscription or of the Conn.
func (s *Subscription) Events() <-chan Event { return s.mb.Out() }

// Close ends the subscription and waits for its goroutine. Undelivered events
// are dropped.
func (s *Subscription) Close() {
	s.c.unsubscribe(s)
	s.stop()
}

func (s *Subscription) stop() { s.mb.Stop() }

func (s *Subscription) push(ev Event) { s.mb.Push(ev) }
