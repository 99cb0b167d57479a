// Package mailbox delivers values in order over a channel through an
// unbounded queue: the sender never blocks and never drops, however slow the
// reader. Connection states and leadership changes reach their subscribers
// this way, because a listener that stalls must not stall the client, and a
// Lost or a lost leadership must never be skipped.
package mailbox

import "sync"

// Mailbox is one subscriber's queue and the goroutine that feeds its
// channel. The goroutine ends on Stop, or on Finish once the queue is empty.
type Mailbox[T any] struct {
	out        chan T
	mu         sync.Mutex
	queue      []T
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

// Push queues v. It never blocks.
func (m *Mailbox[T]) Push(v T) {
	m.mu.Lock()
	m.queue = append(m.queue, v)
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// PushBounded queues v, unless limit values are queued already: then it
// drops them all and queues catchUp() in their place, which must stand for
// everything dropped and v. catchUp runs here, under the mailbox's lock:
// it must be quick and must not touch the mailbox. It never blocks.
func (m *Mailbox[T]) PushBounded(v T, limit int, catchUp func() T) {
	m.mu.Lock()
	if len(m.queue) >= limit {
		clear(m.queue)
		m.queue = append(m.queue[:0], catchUp())
	} else {
		m.queue = append(m.queue, v)
	}
	m.mu.Unlock()
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
