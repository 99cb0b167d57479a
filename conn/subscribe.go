package conn

import "sync"

// Subscription delivers a Conn's state changes in order. Its queue is
// unbounded, so a slow reader delays only itself and never loses Lost or
// Reconnected. Repeated Suspended events cannot occur: the state machine only
// reports a change.
type Subscription struct {
	c      *Conn
	out    chan Event
	mu     sync.Mutex
	queue  []Event
	signal chan struct{} // capacity 1
	quit   chan struct{}
	once   sync.Once
	done   chan struct{}
}

func newSubscription(c *Conn) *Subscription {
	s := &Subscription{
		c:      c,
		out:    make(chan Event),
		signal: make(chan struct{}, 1),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go s.forward()
	return s
}

// Events returns the channel of state changes. It is closed after Close of
// the subscription or of the Conn.
func (s *Subscription) Events() <-chan Event { return s.out }

// Close ends the subscription and waits for its goroutine. Undelivered events
// are dropped.
func (s *Subscription) Close() {
	s.c.unsubscribe(s)
	s.stop()
}

func (s *Subscription) stop() {
	s.once.Do(func() { close(s.quit) })
	<-s.done
}

func (s *Subscription) push(ev Event) {
	s.mu.Lock()
	s.queue = append(s.queue, ev)
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

func (s *Subscription) forward() {
	defer close(s.done)
	defer close(s.out)
	for {
		s.mu.Lock()
		var ev Event
		ok := len(s.queue) > 0
		if ok {
			ev = s.queue[0]
			s.queue = s.queue[1:]
		}
		s.mu.Unlock()
		if !ok {
			select {
			case <-s.signal:
				continue
			case <-s.quit:
				return
			}
		}
		select {
		case s.out <- ev:
		case <-s.quit:
			return
		}
	}
}
