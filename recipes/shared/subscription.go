package shared

import "github.com/zkrecipes/zkrecipes/internal/mailbox"

// Subscription delivers a Value's or a Count's values in order (see
// Value.Subscribe). Its queue is unbounded: a slow reader delays only
// itself and misses nothing the follower read.
type Subscription[T any] struct {
	mb      *mailbox.Mailbox[Versioned[T]]
	convert func([]byte) (T, bool)
	remove  func(subscriber)
}

// subscriber is what a Value delivers to, whatever its subscriptions'
// value type.
type subscriber interface {
	push(Versioned[[]byte])
	finish()
}

func newSubscription[T any](convert func([]byte) (T, bool), remove func(subscriber)) *Subscription[T] {
	return &Subscription[T]{mb: mailbox.New[Versioned[T]](), convert: convert, remove: remove}
}

// Changes returns the channel of values. It is closed when the
// subscription ends.
func (s *Subscription[T]) Changes() <-chan Versioned[T] { return s.mb.Out() }

// Close ends the subscription at once, dropping what it had queued, and
// waits for its goroutine. It is idempotent.
func (s *Subscription[T]) Close() {
	s.remove(s)
	s.mb.Stop()
}

func (s *Subscription[T]) push(v Versioned[[]byte]) {
	if x, ok := s.convert(v.Value); ok {
		s.mb.Push(Versioned[T]{Value: x, Version: v.Version, Zxid: v.Zxid})
	}
}

func (s *Subscription[T]) finish() { s.mb.Finish() }
