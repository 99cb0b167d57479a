// Package mailbox delivers values in order over a channel through a queue:
// the sender never blocks, however slow the reader. Connection states and
// leadership changes reach their subscribers this way, because a listener
// that stalls must not stall the client. The queue is bounded by its
// sender (PushBounded): a reader that falls too far behind is either caught
// up by one value standing for what it missed, or cut off (its sender
// tells it why), never silently skipped and never fed without bound.
package mailbox

import "sync"

// Mailbox is one subscriber's queue and the goroutine that feeds its
// channel. The goroutine ends on Stop, or on Finish once the queue is empty.
type Mailbox[T any] struct {
	out        chan T
	mu         sync.Mutex
	queue      []T
	cut        bool          // cut off: queues nothing more
	signal     chan struct{} // capacity 1: "queue is not empty"
	quit       chan struct{}
	finishing  chan struct{}
	done       chan struct{}
	quitOnce   sync.Once
	finishOnce sync.Once
}

// New starts a mailbox.
func New[T any]() *Mailbox[T] {
	m := &Mailbox[T]{
		out:       make(chan T),
		signal:    make(chan struct{}, 1),
		quit:      make(chan struct{}),
		finishing: make(chan struct{}),
		done:      make(chan struct{}),
	}
	go m.forward()
	return m
}

// Out is the channel values arrive on; it is closed when the mailbox ends.
func (m *Mailbox[T]) Out() <-chan T { return m.out }

// Push queues v whatever the queue holds: for the values a subscription
// begins with, which its sender counts. It never blocks.
func (m *Mailbox[T]) Push(v T) {
	m.mu.Lock()
	if !m.cut {
		m.queue = append(m.queue, v)
	}
	m.mu.Unlock()
	m.wake()
}

// PushBounded queues v, unless limit values are queued already. Then, with
// a catchUp, it drops them all and queues catchUp() in their place, which
// must stand for everything dropped and v; catchUp runs here, under the
// mailbox's lock: it must be quick and must not touch the mailbox. Without
// one (nil), it drops them all and v, queues nothing from then on, and
// reports false: the reader fell behind, and the sender ends the mailbox
// (Finish) once it has recorded why, so that a reader that sees Out close
// can learn it. It never blocks.
func (m *Mailbox[T]) PushBounded(v T, limit int, catchUp func() T) bool {
	m.mu.Lock()
	ok := !m.cut
	switch {
	case m.cut:
	case len(m.queue) < limit:
		m.queue = append(m.queue, v)
	case catchUp != nil:
		clear(m.queue)
		m.queue = append(m.queue[:0], catchUp())
	default:
		clear(m.queue)
		m.queue, m.cut, ok = nil, true, false
	}
	m.mu.Unlock()
	m.wake()
	return ok
}

func (m *Mailbox[T]) wake() {
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// Stop ends the mailbox at once, dropping what is queued, and waits for its
// goroutine.
func (m *Mailbox[T]) Stop() {
	m.quitOnce.Do(func() { close(m.quit) })
	<-m.done
}

// Finish lets the mailbox end once the reader has taken everything queued.
// It does not wait: a reader that stops reading must call Stop.
func (m *Mailbox[T]) Finish() { m.finishOnce.Do(func() { close(m.finishing) }) }

func (m *Mailbox[T]) forward() {
	defer close(m.done)
	defer close(m.out)
	for {
		m.mu.Lock()
		var v T
		ok := len(m.queue) > 0
		if ok {
			v = m.queue[0]
			var zero T
			m.queue[0] = zero // let the value be collected
			m.queue = m.queue[1:]
		}
		m.mu.Unlock()
		if !ok {
			select {
			case <-m.signal:
				continue
			case <-m.finishing:
				return
			case <-m.quit:
				return
			}
		}
		select {
		case m.out <- v:
		case <-m.quit:
			return
		}
	}
}
