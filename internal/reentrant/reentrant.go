// Package reentrant makes a queue of contenders (internal/contend) into a
// lock that is reentrant per goroutine, as Curator's locks are per thread:
// the goroutine holding it may acquire again without a round trip and must
// release as often. Goroutines of one Lock contend like separate processes.
// The mutex and both sides of the read-write lock are Locks.
package reentrant

import (
	"context"
	"errors"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/goid"
	"github.com/zkrecipes/zkrecipes/internal/hold"
)

var (
	// ErrNotOwner: Release from a goroutine that does not hold the lock while
	// another goroutine does.
	ErrNotOwner = errors.New("released by a goroutine that does not hold it")
	// ErrNotHeld: Release with nothing held (more releases than acquires).
	ErrNotHeld = errors.New("not held")
	// ErrWouldBlock: a try found the lock held.
	ErrWouldBlock = errors.New("held by another contender")
	// ErrClosed: the lock (or its client) was closed.
	ErrClosed = errors.New("closed")
)

// Lock is one reentrant lock over one queue. It is safe for concurrent use.
type Lock struct {
	client    *framework.Client
	request   contend.Request
	revocable bool

	life   context.Context // cancelled by Close: ends waits in progress
	cancel context.CancelFunc

	mu     sync.Mutex
	holds  map[int64]*entry // by goroutine
	closed bool
}

type entry struct {
	hold  *hold.Hold
	count int
}

// New returns a lock whose contenders queue as described by request (its
// Client must be client).
func New(client *framework.Client, request contend.Request, revocable bool) *Lock {
	request.Client = client
	life, cancel := context.WithCancel(context.Background())
	return &Lock{client: client, request: request, revocable: revocable, life: life, cancel: cancel, holds: map[int64]*entry{}}
}

// Acquire takes the lock for the calling goroutine (see the package doc);
// noWait gives up with ErrWouldBlock if it is not free at once.
func (l *Lock) Acquire(ctx context.Context, noWait bool) (*hold.Hold, error) {
	g := goid.Current()
	if h, ok, err := l.reenter(g); ok || err != nil {
		return h, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(l.life, cancel)
	defer stop()
	r := l.request
	r.NoWait = noWait
	e, err := contend.Enter(ctx, r)
	if err != nil {
		switch {
		case errors.Is(err, contend.ErrWouldBlock):
			err = ErrWouldBlock
		case l.life.Err() != nil || errors.Is(err, framework.ErrClosed) || errors.Is(err, zk.ErrClosing):
			err = errors.Join(ErrClosed, err)
		}
		return nil, err
	}
	return l.adopt(g, hold.New(l.client, e, l.revocable))
}

// reenter counts one more hold if g already holds the lock.
func (l *Lock) reenter(g int64) (*hold.Hold, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.client.Closed() {
		return nil, false, ErrClosed
	}
	if e := l.holds[g]; e != nil {
		e.count++
		return e.hold, true, nil
	}
	return nil, false, nil
}

// Adopt records h, obtained some other way (the read-write lock's
// downgrade), as held once by the calling goroutine.
func (l *Lock) Adopt(h *hold.Hold) (*hold.Hold, error) { return l.adopt(goid.Current(), h) }

func (l *Lock) adopt(g int64, h *hold.Hold) (*hold.Hold, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = h.Release()
		return nil, ErrClosed
	}
	l.holds[g] = &entry{hold: h, count: 1}
	l.mu.Unlock()
	return h, nil
}

// Release gives up one hold of the calling goroutine; the last one releases
// the node.
func (l *Lock) Release() error {
	g := goid.Current()
	l.mu.Lock()
	e := l.holds[g]
	if e == nil {
		held := len(l.holds) > 0
		l.mu.Unlock()
		if held {
			return ErrNotOwner
		}
		return ErrNotHeld
	}
	e.count--
	if e.count > 0 {
		l.mu.Unlock()
		return nil
	}
	delete(l.holds, g)
	l.mu.Unlock()
	return e.hold.Release()
}

// Held returns the calling goroutine's hold, if any.
func (l *Lock) Held() (*hold.Hold, bool) {
	g := goid.Current()
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.holds[g]; e != nil {
		return e.hold, true
	}
	return nil, false
}

// HeldInProcess reports whether any goroutine holds the lock through l.
func (l *Lock) HeldInProcess() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.holds) > 0
}

// Close ends waits in progress with ErrClosed and releases every hold.
// Further calls return ErrClosed. The client is not closed.
func (l *Lock) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	holds := l.holds
	l.holds = map[int64]*entry{}
	l.mu.Unlock()
	l.cancel()
	var errs []error
	for _, e := range holds {
		if err := e.hold.Release(); err != nil && !errors.Is(err, hold.ErrHoldLost) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
