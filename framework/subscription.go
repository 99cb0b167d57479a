package framework

import (
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/mailbox"
)

// Feed hands values to its subscribers, in the order they are published:
// the one way this module delivers a stream of changes (the client's
// session states, a leader latch's terms, a shared value's values), and a
// building block for recipes of your own. Publish never blocks and never
// drops: each subscription has an unbounded queue and a goroutine that
// feeds its channel, so a slow reader delays only itself and misses
// nothing. The zero value is ready to use; a Feed must not be copied.
type Feed[T any] struct {
	mu    sync.Mutex
	subs  map[*Subscription[T]]struct{}
	ended bool
	err   error
}

// Subscribe returns a subscription to every value published from now on.
// On a feed that has ended it returns a subscription that has ended too.
func (f *Feed[T]) Subscribe() *Subscription[T] { return f.subscribe(nil, 0, nil) }

// SubscribeWith returns a subscription whose first values are first, then
// every value published from now on: a late subscriber to a feed of states
// (a shared value's) learns the state it joins in, and the others do not
// receive it again. This is the module's one rule for a subscription: the
// state as it stands, then every change (see docs/vocabulary.md); call it
// under the lock the publisher publishes under, so that nothing falls
// between the two. On a feed that has ended it returns a subscription that
// has ended too, without first.
func (f *Feed[T]) SubscribeWith(first ...T) *Subscription[T] { return f.subscribe(first, 0, nil) }

// SubscribeBounded is SubscribeWith for a reader that may fall behind and
// can do without the values it missed: its queue holds at most limit
// values (at least 1). When Publish finds it full, it drops everything
// queued and queues catchUp() in its place, a value that stands for all it
// dropped and the one being published (a snapshot of the state they lead
// to, say), then goes on queuing. Memory stays bounded however slow the
// reader, and Publish still never blocks.
//
// catchUp runs inside Publish, on the publisher's goroutine, under the
// feed's lock: it sees the publisher's state as of the value being
// published, if the publisher publishes under its own lock. It must be
// quick, must not block, and must not call the feed. A limit below 1 is
// taken as 1; a nil catchUp makes the subscription unbounded.
func (f *Feed[T]) SubscribeBounded(first T, limit int, catchUp func() T) *Subscription[T] {
	return f.subscribe([]T{first}, max(limit, 1), catchUp)
}

func (f *Feed[T]) subscribe(first []T, limit int, catchUp func() T) *Subscription[T] {
	s := &Subscription[T]{mb: mailbox.New[T](), feed: f, limit: limit, catchUp: catchUp}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		s.err = f.err
		s.mb.Finish()
		return s
	}
	if f.subs == nil {
		f.subs = map[*Subscription[T]]struct{}{}
	}
	f.subs[s] = struct{}{}
	for _, v := range first {
		s.mb.Push(v)
	}
	return s
}

// Publish queues v for every subscription. It never blocks; after End it
// does nothing.
func (f *Feed[T]) Publish(v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		if s.catchUp != nil {
			s.mb.PushBounded(v, s.limit, s.catchUp)
		} else {
			s.mb.Push(v)
		}
	}
}

// End ends the feed: each subscription's channel closes once its reader
// has taken what was published before, and its Err returns err from then
// on (nil: the feed ended normally). Later calls do nothing.
func (f *Feed[T]) End(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return
	}
	f.ended, f.err = true, err
	for s := range f.subs {
		s.setErr(err)
		s.mb.Finish()
	}
	f.subs = nil
}

func (f *Feed[T]) remove(s *Subscription[T]) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, s)
}

// Subscription is one reader's stream of a Feed's values. Its methods are
// safe for concurrent use.
type Subscription[T any] struct {
	mb   *mailbox.Mailbox[T]
	feed *Feed[T]
	// limit and catchUp are set for a bounded subscription only.
	limit   int
	catchUp func() T

	mu  sync.Mutex
	err error
}

// Changes returns the channel the values arrive on, in order. It is closed
// when the subscription ends: after Close (what was queued is dropped), or
// once the reader has taken everything published before its feed ended.
func (s *Subscription[T]) Changes() <-chan T { return s.mb.Out() }

// Err says why the feed ended (for a leadership observer, say, the error
// that stopped it), once Changes is closed; nil while it runs, after a
// normal end, and after Close.
func (s *Subscription[T]) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Subscription[T]) setErr(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// Close ends the subscription at once, dropping what it had queued, and
// waits for its goroutine. A reader that stops reading before its feed ends
// must call it. It is idempotent.
func (s *Subscription[T]) Close() {
	s.feed.remove(s)
	s.mb.Stop()
}
