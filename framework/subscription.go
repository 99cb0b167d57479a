package framework

import (
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/mailbox"
)

// Feed hands values to its subscribers, in the order they are published:
// the one way this module delivers a stream of changes (the client's
// session states, a leader latch's terms, a shared value's values), and a
// building block for recipes of your own. Publish never blocks: each
// subscription has a queue and a goroutine that feeds its channel, so a
// slow reader delays only itself. The queue is bounded (DefaultBound
// values unless the subscription says otherwise): a reader that falls
// further behind is told, never skipped silently and never fed without
// bound. Its subscription either gets one catch-up value standing for what
// it missed (SubscribeBounded), or ends, its Err wrapping
// zkrecipes.ErrFellBehind; see docs/vocabulary.md. The zero value is ready
// to use; a Feed must not be copied.
type Feed[T any] struct {
	mu    sync.Mutex
	subs  map[*Subscription[T]]struct{}
	ended bool
	err   error
}

// DefaultBound is how many values a subscription's queue holds, beyond
// the ones it begins with, before its reader counts as fallen behind. A
// feed publishes one value per change it sees (a server event, a change of
// the session), so a reader that reads in a loop is a handful behind at
// most, and a burst of a thousand changes at once (a thousand members
// joining a group) still fits; a reader stalled for good costs at most
// this many values. The cache's subscriptions hold as many
// (cache.DefaultBufferSize).
const DefaultBound = 1024

// Subscribe returns a subscription to every value published from now on,
// bounded by DefaultBound. On a feed that has ended it returns a
// subscription that has ended too.
func (f *Feed[T]) Subscribe() *Subscription[T] { return f.subscribe(nil, DefaultBound, false, nil) }

// SubscribeWith returns a subscription whose first values are first, then
// every value published from now on: a late subscriber to a feed of states
// (a shared value's) learns the state it joins in, and the others do not
// receive it again. This is the module's one rule for a subscription: the
// state as it stands, then every change (see docs/vocabulary.md); call it
// under the lock the publisher publishes under, so that nothing falls
// between the two. Its queue holds the first values and DefaultBound more
// (see SubscribeWithBound). On a feed that has ended it returns a
// subscription that has ended too, without first.
func (f *Feed[T]) SubscribeWith(first ...T) *Subscription[T] {
	return f.subscribe(first, DefaultBound, false, nil)
}

// SubscribeWithBound is SubscribeWith with a bound of its own in place of
// DefaultBound: its queue holds bound values (at least 1; a bound below 1
// is taken as 1) beyond the first ones. It is for a publisher whose
// values are large, or many at once, or a subscriber that knows how far
// behind it may fall. When Publish finds the queue full, the
// subscription ends: what it had queued is dropped, its channel closes
// after the value it may be delivering already, and its Err wraps
// zkrecipes.ErrFellBehind. Its reader subscribes again to get the state as
// it stands. Publish never blocks and memory stays bounded.
func (f *Feed[T]) SubscribeWithBound(bound int, first ...T) *Subscription[T] {
	return f.subscribe(first, max(bound, 1), false, nil)
}

// SubscribeBounded is SubscribeWith for a reader that may fall behind and
// can do without the values it missed: its queue holds at most limit
// values, first included (at least 1). When Publish finds it full, it
// drops everything queued and queues catchUp() in its place, a value that
// stands for all it dropped and the one being published (a snapshot of the
// state they lead to, say), then goes on queuing. Memory stays bounded
// however slow the reader, Publish still never blocks, and the
// subscription never ends for being behind.
//
// catchUp runs inside Publish, on the publisher's goroutine, under the
// feed's lock: it sees the publisher's state as of the value being
// published, if the publisher publishes under its own lock. It must be
// quick, must not block, and must not call the feed. A limit below 1 is
// taken as 1; with a nil catchUp, a full queue ends the subscription, as
// with SubscribeWithBound.
func (f *Feed[T]) SubscribeBounded(first T, limit int, catchUp func() T) *Subscription[T] {
	return f.subscribe([]T{first}, max(limit, 1), true, catchUp)
}

// subscribe makes a subscription whose queue holds limit values, plus the
// first ones unless total says limit counts them.
func (f *Feed[T]) subscribe(first []T, limit int, total bool, catchUp func() T) *Subscription[T] {
	if !total {
		limit += len(first)
	}
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

// Publish queues v for every subscription, and ends each subscription
// whose reader has fallen more than its bound behind (unless it has a
// catch-up). It never blocks; after End it does nothing.
func (f *Feed[T]) Publish(v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		if s.mb.PushBounded(v, s.limit, s.catchUp) {
			continue
		}
		// Err first: a reader that sees the channel close reads it next.
		delete(f.subs, s)
		s.setErr(fmt.Errorf("%w (more than %d values unread)", zkrecipes.ErrFellBehind, s.limit))
		s.mb.Finish()
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
	// limit is how many values its queue holds; catchUp, set by
	// SubscribeBounded only, stands for them when it is full.
	limit   int
	catchUp func() T

	mu  sync.Mutex
	err error
}

// Changes returns the channel the values arrive on, in order. It is closed
// when the subscription ends: after Close (what was queued is dropped),
// once the reader has taken everything published before its feed ended,
// or when its reader fell more than its bound behind (Err says so).
func (s *Subscription[T]) Changes() <-chan T { return s.mb.Out() }

// Err says why the subscription ended, once Changes is closed: an error
// wrapping zkrecipes.ErrFellBehind when its reader fell more than its
// bound behind (subscribe again: the state as it stands comes first), or
// why its feed ended (for a leadership observer, say, the error that
// stopped it). It is nil while it runs, after a normal end, and after a
// Close that ended it.
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
