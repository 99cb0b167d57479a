// Package rwlock is a fair distributed read-write lock over ZooKeeper,
// wire-compatible with Apache Curator's InterProcessReadWriteLock: readers
// and writers queue in one directory as path/_c_<uuid>-__READ__<seq> and
// path/_c_<uuid>-__WRIT__<seq>, in one global order.
//
// Readers share; a writer holds only when it is first of all. A reader waits
// only on writers queued before it (never on one that came after it), and
// watches the nearest of them. Both sides are reentrant per goroutine and
// hand out the same Hold as the mutex: fencing token, loss signal, no
// orphans.
//
// Downgrade: a goroutine holding the write lock may take the read lock at
// once, then release the write lock; the read node takes the write node's
// place in the queue (Curator >= 5.5's protocol), so no queued writer slips
// in between. Upgrade (read to write) is refused with ErrUpgrade rather than
// deadlocking.
package rwlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/errs"
	ihold "github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/option"
	"github.com/zkrecipes/zkrecipes/internal/reentrant"
)

// Curator's node names for the two sides.
const (
	readName  = "__READ__"
	writeName = "__WRIT__"
)

// The errors of this package: ErrUpgrade, and those every recipe shares
// (package hold documents them) under the same names.
var (
	// ErrUpgrade: the goroutine holds the read lock and asked for the write
	// lock. That would wait for itself; it is refused at once.
	ErrUpgrade = errors.New("rwlock: cannot upgrade a read hold to a write hold")

	ErrNilClient        = hold.ErrNilClient
	ErrInvalidOption    = hold.ErrInvalidOption
	ErrNotOwner         = hold.ErrNotOwner
	ErrNotHeld          = hold.ErrNotHeld
	ErrWouldBlock       = hold.ErrWouldBlock
	ErrClosed           = hold.ErrClosed
	ErrHoldLost         = hold.ErrHoldLost
	ErrOutcomeUnknown   = hold.ErrOutcomeUnknown
	ErrFenceCheckFailed = hold.ErrFenceCheckFailed
	ErrSuspended        = hold.ErrSuspended
	ErrSessionLost      = hold.ErrSessionLost
	ErrReleased         = hold.ErrReleased
	ErrLeaseExpired     = hold.ErrLeaseExpired
	ErrNoLeaseTime      = hold.ErrNoLeaseTime
	ErrNodeDeleted      = hold.ErrNodeDeleted
)

// RWLock is a read-write lock on one directory. It is safe for concurrent
// use.
type RWLock struct {
	client *framework.Client
	path   string
	id     []byte
	read   *ReadLock
	write  *WriteLock
}

// ReadLock is the shared side. It satisfies mutex.Lock.
type ReadLock struct {
	rw   *RWLock
	lock *reentrant.Lock
}

// WriteLock is the exclusive side. It satisfies mutex.Lock.
type WriteLock struct {
	rw   *RWLock
	lock *reentrant.Lock
}

// Option configures an RWLock. Every recipe's Option has this shape, and
// an option of the same name means the same thing in each.
type Option func(*option.Config) error

// WithParticipantID sets the data of this process's nodes (default
// mutex.DefaultParticipantID, as Curator). It must not be empty.
func WithParticipantID(id string) Option { return Option(option.WithParticipantID(id)) }

// WithRevocable makes holds of both sides follow Curator's revocation
// requests (mutex.Revoke on a node; hold.Hold.Revoked), as each side of
// Curator's lock is a revocable InterProcessMutex.
func WithRevocable() Option { return Option(option.WithRevocable()) }

// WithLeaseTime makes every read and write hold end by itself d after it is granted, as
// Redisson's lock(leaseTime): its Done fires with ErrLeaseExpired and its
// node is deleted, even if the holder never releases it (a holder that
// forgets, hangs or deadlocks keeps others out for d at most, not for as
// long as its session lives). Hold.Extend moves the end later. d must be
// positive. The end is measured on this process's clock; like any loss,
// the holder learns of it before the node is deleted, and so before anyone
// else can be granted.
// A reentrant acquire renews the lease to at least d from then; a hold a
// downgrade makes is a read hold, with a lease of its own from then.
func WithLeaseTime(d time.Duration) Option { return Option(option.WithLeaseTime(d)) }

// New returns the read-write lock on directory path.
func New(client *framework.Client, path string, opts ...Option) (*RWLock, error) {
	if client == nil {
		return nil, fmt.Errorf("rwlock: %w", ErrNilClient)
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, fmt.Errorf("rwlock: %w", err)
	}
	cfg, err := option.Build("rwlock", []option.Name{option.ParticipantID, option.Revocable, option.LeaseTime}, opts)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckQueueID(client, "rwlock", path, readName, writeName); err != nil {
		return nil, err
	}
	l := &RWLock{client: client, path: path, id: cfg.ID}
	markers := []string{readName, writeName}
	l.read = &ReadLock{rw: l, lock: reentrant.New(client, metrics.RWLockRead, contend.Request{
		Dir: path, Name: readName, Markers: markers, Data: l.id, Driver: contend.DriverFunc(readDecision),
	}, cfg.Revocable, cfg.Lease)}
	l.write = &WriteLock{rw: l, lock: reentrant.New(client, metrics.RWLockWrite, contend.Request{
		Dir: path, Name: writeName, Markers: markers, Data: l.id, Driver: contend.DriverFunc(writeDecision),
	}, cfg.Revocable, cfg.Lease)}
	return l, nil
}

// readDecision is Curator's read-lock predicate: a reader holds when no
// writer is queued before it, and otherwise waits on the nearest writer
// before it. Only nodes before ours are given (contend.Ahead), so a writer
// that came later can never hold a reader up.
func readDecision(sorted []string, ours int) contend.Decision {
	nearest, writers := -1, 0
	for i := 0; i < ours; i++ {
		if strings.Contains(sorted[i], writeName) {
			nearest = i
			writers++
		}
	}
	if writers == 0 {
		return contend.Decision{Holds: true}
	}
	return contend.Decision{Watch: nearest, OnlyObstacle: writers == 1}
}

// writeDecision: a writer holds when it is first of all. Unlike the mutex it
// never takes the lock on its predecessor's deletion without looking again:
// a downgrade puts a read node in the place of the write node it came from,
// so here, and only here, a node can appear ahead of a waiter.
func writeDecision(sorted []string, ours int) contend.Decision {
	d := contend.First(1).Decide(sorted, ours)
	d.OnlyObstacle = false
	return d
}

// Path returns the lock directory.
func (l *RWLock) Path() string { return l.path }

// ReadLock returns the shared side.
func (l *RWLock) ReadLock() *ReadLock { return l.read }

// WriteLock returns the exclusive side.
func (l *RWLock) WriteLock() *WriteLock { return l.write }

// HeldInProcess reports whether any goroutine holds either side through
// this RWLock.
func (l *RWLock) HeldInProcess() bool {
	return l.read.lock.HeldInProcess() || l.write.lock.HeldInProcess()
}

// ParticipantNodes returns the nodes of both sides in queue order (full
// paths): who holds and who waits, readers and writers alike.
func (l *RWLock) ParticipantNodes(ctx context.Context) ([]string, error) {
	return contend.Nodes(ctx, l.client, l.path, readName, writeName)
}

// Participants returns the participant ids (node data) of both sides in
// queue order, as Curator's InterProcessReadWriteLock participants.
func (l *RWLock) Participants(ctx context.Context) ([]string, error) {
	return contend.Participants(ctx, l.client, l.path, readName, writeName)
}

// Close ends waits in progress and releases every hold of both sides.
func (l *RWLock) Close() error {
	return errors.Join(l.read.lock.Close(), l.write.lock.Close())
}

// Acquire takes the read lock for the calling goroutine, blocking while a
// writer queued before it holds or waits, until ctx ends. A goroutine that
// holds the write lock gets it at once (downgrade).
func (r *ReadLock) Acquire(ctx context.Context) (*hold.Hold, error) { return r.acquire(ctx, false) }

// TryAcquire takes the read lock only if no writer is queued before it.
func (r *ReadLock) TryAcquire(ctx context.Context) (*hold.Hold, error) { return r.acquire(ctx, true) }

func (r *ReadLock) acquire(ctx context.Context, noWait bool) (*hold.Hold, error) {
	if err := errs.NilContext(ctx, "rwlock "+r.rw.path); err != nil {
		return nil, err // before a downgrade, as before a queue
	}
	if _, held := r.lock.Held(); !held {
		if wh, ok := r.rw.write.lock.Held(); ok {
			return r.downgrade(ctx, wh)
		}
	}
	return r.lock.Acquire(ctx, noWait)
}

// testHookBeforeDowngradeCreate, when set by a test, runs in a downgrade
// just before the read node is created.
var testHookBeforeDowngradeCreate func()

// downgrade takes the read lock while holding the write lock: a plain
// ephemeral read node named after the write node's sequence number, so it
// sorts into the write node's place and no writer queued behind can get
// ahead of it when the write lock is released.
func (r *ReadLock) downgrade(ctx context.Context, wh *hold.Hold) (*hold.Hold, error) {
	if err := wh.Err(); err != nil {
		return nil, fmt.Errorf("rwlock: downgrade: %w: %w", ErrHoldLost, err)
	}
	c := r.rw.client
	name := framework.Base(wh.Path())
	seq := contend.SortKey(name, writeName)
	s := c.Session()
	if s.ID != wh.SessionID() {
		return nil, fmt.Errorf("rwlock: downgrade: %w: %w", ErrHoldLost, ErrSessionLost)
	}
	if testHookBeforeDowngradeCreate != nil {
		testHookBeforeDowngradeCreate()
	}
	path, err := c.Create(ctx, framework.Join(r.rw.path, readName+seq), r.rw.id,
		framework.WithMode(framework.Ephemeral), framework.Protected())
	if err != nil {
		return nil, fmt.Errorf("rwlock: downgrade: %w", contend.Err(err, false))
	}
	ok, st, err := c.Exists(ctx, path)
	if err == nil && (!ok || st.EphemeralOwner != s.ID || c.Session().ID != s.ID) {
		err = fmt.Errorf("%w: session changed during downgrade", ErrSessionLost)
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
			err = fmt.Errorf("%w: %w: the write node is gone", ErrHoldLost, ErrNodeDeleted)
		}
	}
	if err != nil {
		_ = contend.Leave(c, path, s.ID)
		return nil, fmt.Errorf("rwlock: downgrade: %w", contend.Err(err, false))
	}
	return r.lock.Adopt(ihold.NewNode(c, &contend.Entry{Path: path, Czxid: st.Czxid, Session: s}, false, r.lock.Meter()))
}

// Release gives up one read hold of the calling goroutine (see
// mutex.Mutex.Release).
func (r *ReadLock) Release() error { return r.lock.Release() }

// Held reports whether the calling goroutine holds the read lock.
func (r *ReadLock) Held() (*hold.Hold, bool) { return r.lock.Held() }

// Acquire takes the write lock for the calling goroutine: it blocks until
// it is first in the queue, or ctx ends. A goroutine holding only the read
// lock gets ErrUpgrade at once.
func (w *WriteLock) Acquire(ctx context.Context) (*hold.Hold, error) { return w.acquire(ctx, false) }

// TryAcquire takes the write lock only if no one else holds or waits.
func (w *WriteLock) TryAcquire(ctx context.Context) (*hold.Hold, error) { return w.acquire(ctx, true) }

func (w *WriteLock) acquire(ctx context.Context, noWait bool) (*hold.Hold, error) {
	if err := errs.NilContext(ctx, "rwlock "+w.rw.path); err != nil {
		return nil, err
	}
	if _, holdsWrite := w.lock.Held(); !holdsWrite {
		if _, holdsRead := w.rw.read.lock.Held(); holdsRead {
			return nil, ErrUpgrade
		}
	}
	return w.lock.Acquire(ctx, noWait)
}

// Release gives up one write hold of the calling goroutine (see
// mutex.Mutex.Release).
func (w *WriteLock) Release() error { return w.lock.Release() }

// Held reports whether the calling goroutine holds the write lock.
func (w *WriteLock) Held() (*hold.Hold, bool) { return w.lock.Held() }
