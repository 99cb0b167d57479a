// Package reentrant makes a queue of contenders (internal/contend) into a
// lock that is reentrant per goroutine, as Curator's locks are per thread:
// the goroutine holding it may acquire again without a round trip and must
// release as often. Goroutines of one Lock contend like separate processes.
// The mutex and both sides of the read-write lock are Locks.
package reentrant

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	pub "github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/errs"
	"github.com/zkrecipes/zkrecipes/internal/fwlink"
	"github.com/zkrecipes/zkrecipes/internal/goid"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

// The sentinels of a Lock: those every recipe shares.
var (
	ErrNotOwner   = hold.ErrNotOwner
	ErrNotHeld    = hold.ErrNotHeld
	ErrWouldBlock = hold.ErrWouldBlock
	ErrClosed     = hold.ErrClosed
)

// Lock is one reentrant lock over one queue. It is safe for concurrent use.
type Lock struct {
	client    *framework.Client
	name      string // the recipe and its path, for errors
	request   contend.Request
	revocable bool
	lease     time.Duration // each node's lease time; 0: none
	meter     *metrics.Recipe

	life   context.Context // cancelled by Close: ends waits in progress
	cancel context.CancelFunc

	mu     sync.Mutex
	holds  map[int64]*entry // by goroutine
	closed bool
	// ended keeps the most recent entries whose lease ran out, by
	// goroutine, so that a late per-goroutine Release still reports the
	// lease's end; at most maxEnded, oldest out first (a goroutine that
	// never comes back must not be kept for ever).
	ended      map[int64]*entry
	endedOrder []int64
}

// maxEnded bounds Lock.ended.
const maxEnded = 1024

// entry is one goroutine's holding of the lock: one node, and the open
// acquisitions of it, most recent last.
type entry struct {
	node  *hold.Node
	holds []*hold.Hold
}

// New returns a lock whose contenders queue as described by request (its
// Client must be client). kind names the recipe in the client's metrics.
// lease, if positive, is the lease time of every node it is granted
// (hold.Node.Lease), renewed by each reentrant acquire.
func New(client *framework.Client, kind metrics.Kind, request contend.Request, revocable bool, lease time.Duration) *Lock {
	request.Client = client
	life, cancel := context.WithCancel(context.Background())
	return &Lock{client: client, name: kind.String() + " " + request.Dir, request: request, revocable: revocable, lease: lease, life: life, cancel: cancel, holds: map[int64]*entry{},
		meter: fwlink.Of(client).Metrics().Recipe(kind, request.Dir)}
}

// Meter is the lock's instruments, for a hold its recipe grants another
// way (the read-write lock's downgrade).
func (l *Lock) Meter() *metrics.Recipe { return l.meter }

// Acquire takes the lock for the calling goroutine (see the package doc);
// noWait gives up with ErrWouldBlock if it is not free at once. Every call
// that succeeds returns a Hold of its own. An acquire that queues is
// measured (acquire duration and outcome); a re-entry is not: it does not
// wait.
func (l *Lock) Acquire(ctx context.Context, noWait bool) (_ *pub.Hold, err error) {
	if err := errs.NilContext(ctx, l.name); err != nil {
		return nil, err // even for a re-entry, which would not use it
	}
	g := goid.Current()
	if h, ok, err := l.reenter(g); ok || err != nil {
		return (*pub.Hold)(h), err
	}
	start := time.Now()
	defer func(ctx context.Context) { l.meter.Acquire(ctx, start, err) }(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(l.life, cancel)
	defer stop()
	r := l.request
	r.NoWait = noWait
	e, err := contend.Enter(ctx, r)
	if err != nil {
		return nil, contend.Err(err, l.life.Err() != nil)
	}
	h, err := l.adopt(g, hold.NewNode(l.client, e, l.revocable, l.meter))
	return (*pub.Hold)(h), err
}

// reenter opens one more acquisition if g already holds the lock. A lost
// hold is not entered again: the caller gets the loss, and the count stays.
func (l *Lock) reenter(g int64) (*hold.Hold, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.client.Closed() {
		return nil, false, ErrClosed
	}
	e := l.live(g)
	if e == nil {
		return nil, false, nil
	}
	if l.lease > 0 {
		e.node.Lease(l.lease)
	}
	h, err := hold.NewHold(e.node, l.releaser(g, e))
	if err != nil {
		return nil, false, err
	}
	e.holds = append(e.holds, h)
	return h, true, nil
}

// live is g's entry, unless its node's lease ran out: a goroutine that
// forgot to release is what a lease is for, and it may take the lock
// again once the lease has given it back (as Redisson's lock(leaseTime)).
// The expired entry is forgotten here; its holds' Release still reports
// the lease's end. Called with l.mu held.
func (l *Lock) live(g int64) *entry {
	e := l.holds[g]
	if e != nil && e.expired() {
		delete(l.holds, g)
		return nil
	}
	return e
}

// expired reports whether e's node ended by its lease.
func (e *entry) expired() bool { return errors.Is(e.node.Err(), hold.ErrLeaseExpired) }

// Adopt records n, obtained some other way (the read-write lock's
// downgrade), as held once by the calling goroutine.
func (l *Lock) Adopt(n *hold.Node) (*pub.Hold, error) {
	h, err := l.adopt(goid.Current(), n)
	return (*pub.Hold)(h), err
}

func (l *Lock) adopt(g int64, n *hold.Node) (*hold.Hold, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = n.Release()
		return nil, ErrClosed
	}
	if l.lease > 0 {
		n.Lease(l.lease)
	}
	e := &entry{node: n}
	if l.lease > 0 {
		// A goroutine that forgot its hold may never come back (a request
		// handler's): its entry goes at the lease's end, not at its next
		// Acquire (live), nor at Close.
		n.OnExpire(func() {
			l.mu.Lock()
			if l.holds[g] == e {
				delete(l.holds, g)
				l.rememberEnded(g, e)
			}
			l.mu.Unlock()
		})
	}
	h, err := hold.NewHold(n, l.releaser(g, e))
	if err != nil {
		// Lost between the grant and now: never hand it out.
		l.mu.Unlock()
		_ = n.Release()
		return nil, err
	}
	e.holds = []*hold.Hold{h}
	l.holds[g] = e
	delete(l.ended, g) // a new hold: g's Release means this one now
	l.mu.Unlock()
	return h, nil
}

// rememberEnded keeps e, g's entry whose lease ran out, for a late
// Release by g. Called with l.mu held.
func (l *Lock) rememberEnded(g int64, e *entry) {
	if l.ended == nil {
		l.ended = map[int64]*entry{}
	}
	if _, ok := l.ended[g]; !ok {
		l.endedOrder = append(l.endedOrder, g)
	}
	l.ended[g] = e
	for len(l.endedOrder) > maxEnded {
		delete(l.ended, l.endedOrder[0])
		l.endedOrder = l.endedOrder[1:]
	}
}

// releaser is the bookkeeping of one acquisition by goroutine g: it leaves
// g's entry, and the last one releases the node. It may run on any
// goroutine: a Hold names its acquisition.
func (l *Lock) releaser(g int64, e *entry) func(*hold.Hold) error {
	return func(h *hold.Hold) error {
		l.mu.Lock()
		if !slices.Contains(e.holds, h) {
			l.mu.Unlock()
			return hold.ErrReleasedByClose // Close released it already
		}
		e.holds = slices.DeleteFunc(e.holds, func(x *hold.Hold) bool { return x == h })
		if len(e.holds) > 0 {
			l.mu.Unlock()
			return nil
		}
		// g may hold a newer entry by now (live forgot this one).
		if l.holds[g] == e {
			delete(l.holds, g)
		}
		if l.ended[g] == e {
			delete(l.ended, g) // its order slot goes when it is evicted
		}
		l.mu.Unlock()
		return e.node.Release()
	}
}

// Release gives up the calling goroutine's most recent acquisition (as
// Curator's release, per thread); the last one releases the node.
func (l *Lock) Release() error {
	g := goid.Current()
	for {
		l.mu.Lock()
		e := l.holds[g]
		if e == nil {
			e = l.ended[g] // its lease ran out: its Release says so
			if e != nil && len(e.holds) == 0 {
				delete(l.ended, g)
				e = nil
			}
		}
		if e == nil {
			held := len(l.holds) > 0
			l.mu.Unlock()
			if held {
				return ErrNotOwner
			}
			return ErrNotHeld
		}
		h := e.holds[len(e.holds)-1]
		l.mu.Unlock()
		if testHookAfterPick != nil {
			testHookAfterPick()
		}
		err := h.Release()
		if !errors.Is(err, hold.ErrReleased) {
			return err
		}
		// Released through its handle meanwhile, by another goroutine:
		// give back the next most recent one, if any is left.
		runtime.Gosched()
	}
}

// testHookAfterPick, when set by a test, runs in Release between picking
// the acquisition to give back and giving it back.
var testHookAfterPick func()

// Held returns the calling goroutine's most recent acquisition, if any.
func (l *Lock) Held() (*pub.Hold, bool) {
	g := goid.Current()
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.live(g); e != nil {
		return (*pub.Hold)(e.holds[len(e.holds)-1]), true
	}
	return nil, false
}

// HeldInProcess reports whether any goroutine holds the lock through l (a
// hold whose lease ran out does not count).
func (l *Lock) HeldInProcess() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.holds {
		if !e.expired() {
			return true
		}
	}
	return false
}

// Close ends waits in progress with ErrClosed and releases every hold.
// Later calls return nil; Release of a Hold it released returns an error
// matching both ErrReleased and ErrClosed.
// The client is not closed.
func (l *Lock) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	holds := l.holds
	l.holds = map[int64]*entry{}
	for _, e := range holds {
		e.holds = nil // their Release says ErrReleasedByClose
	}
	l.mu.Unlock()
	l.cancel()
	var errs []error
	for _, e := range holds {
		if err := e.node.Release(); err != nil && !errors.Is(err, hold.ErrHoldLost) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
