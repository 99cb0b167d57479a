package rwlock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/engine/reentrant"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// Curator's node names for the two sides.
const (
	readName  = "__READ__"
	writeName = "__WRIT__"
)

// ErrUpgrade: the goroutine holds the read lock and asked for the write
// lock. That would wait for itself; it is refused at once.
var ErrUpgrade = errors.New("cannot upgrade a read hold to a write hold")

// The recipes' names in errors: each side's, and the whole lock's.
const (
	recipe      = "rwlock"
	readRecipe  = "read lock"
	writeRecipe = "write lock"
)

// RWLock is a read-write lock on one directory. It is safe for concurrent
// use; make one with New.
type RWLock struct {
	client *framework.Client
	path   string
	id     []byte
	read   *ReadLock
	write  *WriteLock
}

// ReadLock is the shared side. It is a mutex.Lock.
type ReadLock struct {
	rw   *RWLock
	lock *reentrant.Lock
}

// WriteLock is the exclusive side. It is a mutex.Lock.
type WriteLock struct {
	rw   *RWLock
	lock *reentrant.Lock
}

// New returns the read-write lock on directory path. It sends nothing.
func New(client *framework.Client, path string, opts ...Option) (*RWLock, error) {
	if client == nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	cfg, err := framework.Configure(recipe, path, config{}, opts, Option.applyRWLock)
	if err != nil {
		return nil, err
	}
	id := []byte(cfg.ParticipantID())
	if err := engine.CheckData(client, path, id, readName, writeName); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	l := &RWLock{client: client, path: path, id: id}
	markers := []string{readName, writeName}
	l.read = &ReadLock{rw: l, lock: reentrant.New(client, reentrant.Config{Recipe: readRecipe, Kind: "rwlock_read", Request: engine.Request{
		Dir: path, Name: readName, Markers: markers, Data: l.id, Driver: engine.DriverFunc(readDecision),
	}, Revocable: cfg.revocable, LeaseTime: cfg.lease})}
	l.write = &WriteLock{rw: l, lock: reentrant.New(client, reentrant.Config{Recipe: writeRecipe, Kind: "rwlock_write", Request: engine.Request{
		Dir: path, Name: writeName, Markers: markers, Data: l.id, Driver: engine.DriverFunc(writeDecision),
	}, Revocable: cfg.revocable, LeaseTime: cfg.lease})}
	return l, nil
}

// readDecision is Curator's read-lock predicate: a reader holds when no
// writer is queued before it, and otherwise waits on the nearest writer
// before it. Only nodes before ours are given (engine.Ahead), so a writer
// that came later can never hold a reader up.
func readDecision(sorted []string, ours int) engine.Decision {
	nearest, writers := -1, 0
	for i := 0; i < ours; i++ {
		if strings.Contains(sorted[i], writeName) {
			nearest = i
			writers++
		}
	}
	if writers == 0 {
		return engine.Decision{Holds: true}
	}
	return engine.Decision{Watch: nearest, OnlyObstacle: writers == 1}
}

// writeDecision: a writer holds when it is first of all. Unlike the mutex it
// never takes the lock on its predecessor's deletion without looking again:
// a downgrade puts a read node in the place of the write node it came from,
// so here, and only here, a node can appear ahead of a waiter.
func writeDecision(sorted []string, ours int) engine.Decision {
	d := engine.First(1).Decide(sorted, ours)
	d.OnlyObstacle = false
	return d
}

// Path returns the lock directory.
func (l *RWLock) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// ReadLock returns the shared side (nil for a nil or zero RWLock).
func (l *RWLock) ReadLock() *ReadLock {
	if l == nil {
		return nil
	}
	return l.read
}

// WriteLock returns the exclusive side (nil for a nil or zero RWLock).
func (l *RWLock) WriteLock() *WriteLock {
	if l == nil {
		return nil
	}
	return l.write
}

// Holds returns the open holds of both sides in this process, whichever
// goroutines hold them.
func (l *RWLock) Holds() []*hold.Hold {
	if l.usable() != nil {
		return nil
	}
	return append(l.write.lock.Holds(), l.read.lock.Holds()...)
}

// ParticipantNodes returns the nodes of both sides in queue order (full
// paths): who holds and who waits, readers and writers alike.
func (l *RWLock) ParticipantNodes(ctx context.Context) ([]string, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if err := engine.CheckCall(l.client, ctx); err != nil {
		return nil, framework.RecipeErr(recipe, l.path, err)
	}
	nodes, err := engine.Nodes(ctx, l.client, l.path, readName, writeName)
	return nodes, framework.RecipeErr(recipe, l.path, err)
}

// Participants returns the participant ids (node data) of both sides in
// queue order, as Curator's InterProcessReadWriteLock participants.
func (l *RWLock) Participants(ctx context.Context) ([]string, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if err := engine.CheckCall(l.client, ctx); err != nil {
		return nil, framework.RecipeErr(recipe, l.path, err)
	}
	ids, err := engine.Participants(ctx, l.client, l.path, readName, writeName)
	return ids, framework.RecipeErr(recipe, l.path, err)
}

// Close ends waits in progress with zkrecipes.ErrClosed and releases every
// hold of both sides, deleting their nodes; a later Release of one of them
// returns hold.ErrReleasedByClose. It is idempotent, waits for each delete
// to be sent at most framework.WithReleaseTimeout, and does not close the
// client.
func (l *RWLock) Close() error {
	if err := l.usable(); err != nil {
		return err
	}
	return errors.Join(l.read.lock.Close(), l.write.lock.Close())
}

// usable says why l cannot be used: it is nil or a zero RWLock.
func (l *RWLock) usable() error {
	if l == nil || l.read == nil || l.write == nil {
		return framework.RecipeErr(recipe, "", errZero)
	}
	return nil
}

// errZero: a nil or zero lock of this package.
var errZero = fmt.Errorf("%w: a nil or zero read-write lock: make one with New", zkrecipes.ErrInvalidArgument)

// Acquire takes the read lock for the calling goroutine, blocking while a
// writer queued before it holds or waits, until ctx ends. A goroutine that
// holds the write lock gets it at once (downgrade).
func (r *ReadLock) Acquire(ctx context.Context) (*hold.Hold, error) { return r.acquire(ctx, false) }

// TryAcquire takes the read lock only if no writer is queued before it,
// else it returns an error wrapping zkrecipes.ErrWouldBlock.
func (r *ReadLock) TryAcquire(ctx context.Context) (*hold.Hold, error) { return r.acquire(ctx, true) }

func (r *ReadLock) acquire(ctx context.Context, noWait bool) (*hold.Hold, error) {
	if r == nil || r.lock == nil {
		return nil, framework.RecipeErr(readRecipe, "", errZero)
	}
	if ctx == nil {
		return nil, framework.RecipeErr(readRecipe, r.rw.path, zkrecipes.ErrNilContext)
	}
	if _, held := r.lock.Current(); !held {
		if wh, ok := r.rw.write.lock.Current(); ok {
			h, err := r.downgrade(ctx, wh)
			return h, framework.RecipeErr(readRecipe, r.rw.path, err)
		}
	}
	return r.lock.Acquire(ctx, noWait)
}

// downgrade takes the read lock while holding the write lock: a plain
// ephemeral read node named after the write node's sequence number, so it
// sorts into the write node's place and no writer queued behind can get
// ahead of it when the write lock is released.
func (r *ReadLock) downgrade(ctx context.Context, wh *hold.Hold) (*hold.Hold, error) {
	if err := wh.Err(); err != nil {
		return nil, fmt.Errorf("downgrade: %w: %w", zkrecipes.ErrHoldLost, err)
	}
	c := r.rw.client
	name := framework.Base(wh.Path())
	seq := engine.SortKey(name, writeName)
	s := c.Session()
	if s.ID != wh.SessionID() {
		return nil, fmt.Errorf("downgrade: %w: %w", zkrecipes.ErrHoldLost, zkrecipes.ErrSessionLost)
	}
	path, err := c.Create(ctx, framework.Join(r.rw.path, readName+seq), r.rw.id,
		framework.WithMode(framework.Ephemeral), framework.Protected())
	if err != nil {
		return nil, fmt.Errorf("downgrade: %w", engine.Err(err, false))
	}
	ok, st, err := c.Exists(ctx, path)
	if err == nil && (!ok || st.EphemeralOwner != s.ID || c.Session().ID != s.ID) {
		err = fmt.Errorf("%w: session changed during downgrade", zkrecipes.ErrSessionLost)
	}
	if err == nil {
		// The read node only takes the write node's place if that is
		// still ours once the read node exists (our session's requests
		// are applied in order): deleted by someone else before, the next
		// writer may hold already, and would find a reader beside it.
		var wok bool
		var wst *zk.Stat
		wok, wst, err = c.Exists(ctx, wh.Path())
		if err == nil && (!wok || wst.EphemeralOwner != s.ID || wh.Err() != nil) {
			err = fmt.Errorf("%w: %w: the write node is gone", zkrecipes.ErrHoldLost, zkrecipes.ErrNodeDeleted)
		}
	}
	if err != nil {
		_ = engine.Leave(c, path, s.ID)
		return nil, fmt.Errorf("downgrade: %w", engine.Err(err, false))
	}
	return r.lock.Adopt(r.lock.Follow(engine.Grant{Path: path, Token: st.Czxid, Session: s}))
}

// Release gives up one read hold of the calling goroutine (see
// mutex.Mutex.Release).
func (r *ReadLock) Release() error {
	if r == nil || r.lock == nil {
		return framework.RecipeErr(readRecipe, "", errZero)
	}
	return r.lock.Release()
}

// Held returns the calling goroutine's most recent read hold, if it holds
// the read lock and the hold is still trusted (a lost one says false).
func (r *ReadLock) Held() (*hold.Hold, bool) {
	if r == nil || r.lock == nil {
		return nil, false
	}
	return r.lock.Held()
}

// Holds returns the open read holds of this RWLock in this process,
// whichever goroutines hold them.
func (r *ReadLock) Holds() []*hold.Hold {
	if r == nil || r.lock == nil {
		return nil
	}
	return r.lock.Holds()
}

// Acquire takes the write lock for the calling goroutine: it blocks until
// it is first in the queue, or ctx ends. A goroutine holding only the read
// lock gets ErrUpgrade at once.
func (w *WriteLock) Acquire(ctx context.Context) (*hold.Hold, error) { return w.acquire(ctx, false) }

// TryAcquire takes the write lock only if no one else holds or waits.
func (w *WriteLock) TryAcquire(ctx context.Context) (*hold.Hold, error) { return w.acquire(ctx, true) }

func (w *WriteLock) acquire(ctx context.Context, noWait bool) (*hold.Hold, error) {
	if w == nil || w.lock == nil {
		return nil, framework.RecipeErr(writeRecipe, "", errZero)
	}
	if ctx == nil {
		return nil, framework.RecipeErr(writeRecipe, w.rw.path, zkrecipes.ErrNilContext)
	}
	if _, holdsWrite := w.lock.Current(); !holdsWrite {
		if _, holdsRead := w.rw.read.lock.Current(); holdsRead {
			return nil, framework.RecipeErr(writeRecipe, w.rw.path, ErrUpgrade)
		}
	}
	return w.lock.Acquire(ctx, noWait)
}

// Release gives up one write hold of the calling goroutine (see
// mutex.Mutex.Release).
func (w *WriteLock) Release() error {
	if w == nil || w.lock == nil {
		return framework.RecipeErr(writeRecipe, "", errZero)
	}
	return w.lock.Release()
}

// Held returns the calling goroutine's most recent write hold, if it holds
// the write lock and the hold is still trusted (a lost one says false).
func (w *WriteLock) Held() (*hold.Hold, bool) {
	if w == nil || w.lock == nil {
		return nil, false
	}
	return w.lock.Held()
}

// Holds returns the open write holds of this RWLock in this process (one
// goroutine's nested acquisitions, at most).
func (w *WriteLock) Holds() []*hold.Hold {
	if w == nil || w.lock == nil {
		return nil
	}
	return w.lock.Holds()
}
