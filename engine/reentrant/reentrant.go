// Package reentrant makes a queue of package engine into a lock that is
// reentrant per goroutine, as Curator's locks are per thread: the goroutine
// holding it may acquire again without a round trip and must release as
// often. Goroutines of one Lock contend like separate processes. The mutex,
// both sides of the read-write lock and the leader selector are Locks; a
// lock of your own with a driver of its own can be one too.
package reentrant

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/goid"
)

// Lock is one reentrant lock over one queue. It is safe for concurrent use.
type Lock struct {
	queue
	// rt is the lock's lifecycle: its closed state, and the contexts of
	// the acquires in progress, which its Close ends.
	rt *framework.Runtime

	mu    sync.Mutex
	holds map[int64]*entry // by goroutine
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
	node  *engine.Node
	holds []*hold.Hold
}

// Config is a Lock's.
type Config struct {
	// Recipe names the lock in its errors, with Request.Dir as its path
	// ("mutex /locks/a: ..."); Kind names it in the metrics (the kind
	// attribute, see framework.RecipeMeter).
	Recipe string
	Kind   string
	// Request is the queue each goroutine's node enters; its Client is
	// the Lock's client.
	Request engine.Request
	// Revocable makes its holds follow Curator's revocation requests
	// (engine.WithRevocable).
	Revocable bool
	// LeaseTime, if positive, is the lease time of every node it is
	// granted (engine.Node.Lease), renewed by each reentrant acquire.
	LeaseTime time.Duration
	// Watcher, if not nil, follows the nodes it is granted
	// (engine.WithWatcher): many Locks on one client, held at once, then
	// cost no goroutine each.
	Watcher *engine.Watcher
}

// New returns a lock on client as cfg says. Nothing is sent until the
// first Acquire.
func New(client *framework.Client, cfg Config) *Lock {
	return &Lock{queue: newQueue(client, cfg),
		rt: framework.NewRuntime(client, cfg.Recipe, cfg.Request.Dir), holds: map[int64]*entry{}}
}

// Follow follows g, a node granted to this lock (by its queue, or another
// way: the read-write lock's downgrade), as the lock's holds are followed.
func (l *Lock) Follow(g engine.Grant) *engine.Node { return l.follow(g) }

// Acquire takes the lock for the calling goroutine (see the package doc);
// noWait gives up with zkrecipes.ErrWouldBlock if it is not free at once. Every call
// that succeeds returns a Hold of its own. An acquire that queues is
// measured (acquire duration and outcome); a re-entry is not: it does not
// wait.
func (l *Lock) Acquire(ctx context.Context, noWait bool) (*hold.Hold, error) {
	return l.AcquireQueued(ctx, noWait, nil)
}

// AcquireQueued is Acquire that calls queued (if not nil) each time the
// goroutine's node is in the queue: a leader selector's Start returns then.
func (l *Lock) AcquireQueued(ctx context.Context, noWait bool, queued func(path string)) (*hold.Hold, error) {
	if ctx == nil {
		return nil, l.err(zkrecipes.ErrNilContext)
	}
	h, err := l.acquire(ctx, noWait, queued)
	return h, l.err(err)
}

// err names the recipe and its path in err.
func (l *Lock) err(err error) error { return l.rt.Err(err) }

func (l *Lock) acquire(ctx context.Context, noWait bool, queued func(string)) (_ *hold.Hold, err error) {
	g := goid.Current()
	if l.confirm(ctx, g) {
		if h, ok, err := l.reenter(g); ok || err != nil {
			return h, err
		}
	}
	// Refused before it is measured, as before anything is sent.
	wctx, cancel, err := l.rt.Within(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	start := time.Now()
	defer func(ctx context.Context) { l.meter.Acquire(ctx, start, err) }(ctx)
	h, err := l.take(wctx, noWait, queued, l.closed, func(n *engine.Node) (*hold.Hold, error) { return l.adopt(g, n) })
	if err == nil && l.closed() && h.Err() != nil {
		// A Close after adopt released it (the hold is in the map
		// Close emptied): it was never the caller's to use.
		return nil, zkrecipes.ErrClosed
	}
	return h, err
}

// closed says whether the lock or its client is closed.
func (l *Lock) closed() bool { return l.rt.Closed() || l.client.Closed() }

// confirm has g's node, if g holds the lock, checked before it is
// entered again (engine.Node.Confirm): a hold nobody waited on has not
// followed its node, which someone else may have deleted since. It says
// whether g holds the lock; only g adds an entry for g, so a first
// acquisition need not look again (reenter).
func (l *Lock) confirm(ctx context.Context, g int64) bool {
	l.mu.Lock()
	e := l.holds[g]
	l.mu.Unlock()
	if e == nil {
		return false
	}
	e.node.Confirm(ctx)
	return true
}

// reenter opens one more acquisition if g already holds the lock. A lost
// hold is not entered again: the caller gets the loss, and the count stays.
func (l *Lock) reenter(g int64) (*hold.Hold, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rt.Closed() || l.client.Closed() {
		return nil, false, zkrecipes.ErrClosed
	}
	e := l.live(g)
	if e == nil {
		return nil, false, nil
	}
	if l.lease > 0 {
		_ = e.node.Lease(l.lease) // positive: checked by the recipe
	}
	h, err := e.node.NewHold(l.releaser(g, e))
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

// expired reports whether e's node ended by its lease. It reads the
// node's end as it stands (Loss), not Err: asking Err is waiting on the
// node, and the lock's bookkeeping (Holds, Current) must not have every
// hold followed.
func (e *entry) expired() bool { return errors.Is(e.node.Loss(), zkrecipes.ErrLeaseExpired) }

// Adopt records n, obtained some other way (the read-write lock's
// downgrade), as held once by the calling goroutine.
func (l *Lock) Adopt(n *engine.Node) (*hold.Hold, error) {
	return l.adopt(goid.Current(), n)
}

// adopt hands n out, unless the lock is closed. Close marks the Runtime
// closed before its release (releaseAll) takes l.mu to empty l.holds, and
// adopt checks and records under l.mu: so either adopt ran first, and
// releaseAll finds n in l.holds and releases it, or adopt sees the lock
// closed and releases n itself, never handing it out. No node is left
// held, and no hold is handed out after Close.
func (l *Lock) adopt(g int64, n *engine.Node) (*hold.Hold, error) {
	l.mu.Lock()
	if l.rt.Closed() {
		l.mu.Unlock()
		_ = n.Release()
		return nil, zkrecipes.ErrClosed
	}
	if l.lease > 0 {
		_ = n.Lease(l.lease) // positive: checked by the recipe
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
	h, err := n.NewHold(l.releaser(g, e))
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
func (l *Lock) Release() error { return l.err(l.release()) }

func (l *Lock) release() error {
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
				return zkrecipes.ErrNotOwner
			}
			return zkrecipes.ErrNotHeld
		}
		h := e.holds[len(e.holds)-1]
		l.mu.Unlock()
		err := h.Release()
		if !errors.Is(err, zkrecipes.ErrReleased) {
			return err
		}
		// Released through its handle meanwhile, by another goroutine:
		// give back the next most recent one, if any is left.
		runtime.Gosched()
	}
}

// Held returns the calling goroutine's most recent acquisition, if any and
// still trusted: once it is lost (its Err set) Held says false, though
// the acquisition is still the goroutine's to release.
func (l *Lock) Held() (*hold.Hold, bool) {
	if h, ok := l.Current(); ok && h.Err() == nil {
		return h, true
	}
	return nil, false
}

// Current returns the calling goroutine's most recent acquisition, if any,
// trusted or not: what the goroutine has to release.
func (l *Lock) Current() (*hold.Hold, bool) {
	g := goid.Current()
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.live(g); e != nil {
		return e.holds[len(e.holds)-1], true
	}
	return nil, false
}

// Holds returns the open acquisitions of every goroutine (a hold whose
// lease ran out is not open).
func (l *Lock) Holds() []*hold.Hold {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*hold.Hold
	for _, e := range l.holds {
		if !e.expired() {
			out = append(out, e.holds...)
		}
	}
	return out
}

// Close ends waits in progress with zkrecipes.ErrClosed and releases every hold.
// Later calls return nil; Release of a Hold it released returns an error
// matching both zkrecipes.ErrReleased and zkrecipes.ErrClosed.
// The client is not closed.
func (l *Lock) Close() error {
	return l.rt.Close(func(context.Context) error { return l.releaseAll() })
}

// releaseAll releases every hold, for Close (see adopt).
func (l *Lock) releaseAll() error {
	l.mu.Lock()
	holds := l.holds
	l.holds = map[int64]*entry{}
	var given []*hold.Hold
	for _, e := range holds {
		given = append(given, e.holds...)
		e.holds = nil // their Release says ErrReleasedByClose
	}
	l.mu.Unlock()
	// Each hold is given back as its holder's Release would (its
	// releaser finds it gone and leaves the node to the loop below), so
	// that it says Close gave it back to Fenced and to every later
	// Release, as a semaphore's lease does, not merely that its node was
	// released.
	for _, h := range given {
		_ = h.Release()
	}
	var errs []error
	for _, e := range holds {
		if err := e.node.Release(); err != nil && !errors.Is(err, zkrecipes.ErrHoldLost) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
