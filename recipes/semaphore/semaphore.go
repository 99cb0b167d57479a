package semaphore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/errs"
	"github.com/zkrecipes/zkrecipes/internal/fwlink"
	ihold "github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/option"
)

// The errors of this package. Those every recipe shares (package hold
// documents them) come under the same names; the rest are the semaphore's
// own bad input.
var (
	// ErrInvalidMax: New with a maximum below 1.
	ErrInvalidMax = fmt.Errorf("semaphore: %w: max leases must be at least 1", hold.ErrInvalidOption)
	// ErrInvalidCount: Acquire or TryAcquire of fewer than 1 lease.
	ErrInvalidCount = errors.New("semaphore: must acquire at least 1 lease")
	// ErrTooMany: Acquire or TryAcquire of more leases than a fixed maximum;
	// it could never succeed.
	ErrTooMany = errors.New("semaphore: more leases asked than the maximum")

	ErrNilClient        = hold.ErrNilClient
	ErrInvalidOption    = hold.ErrInvalidOption
	ErrWouldBlock       = hold.ErrWouldBlock
	ErrClosed           = hold.ErrClosed
	ErrReleased         = hold.ErrReleased
	ErrLeaseExpired     = hold.ErrLeaseExpired
	ErrNoLeaseTime      = hold.ErrNoLeaseTime
	ErrHoldLost         = hold.ErrHoldLost
	ErrOutcomeUnknown   = hold.ErrOutcomeUnknown
	ErrFenceCheckFailed = hold.ErrFenceCheckFailed
	ErrSuspended        = hold.ErrSuspended
	ErrSessionLost      = hold.ErrSessionLost
	ErrNodeDeleted      = hold.ErrNodeDeleted
)

// errNoRoom is the semaphore's ErrWouldBlock.
var errNoRoom = fmt.Errorf("semaphore: not enough leases free: %w", ErrWouldBlock)

// Curator's names (InterProcessSemaphoreV2, InterProcessMutex).
const (
	locksDir  = "locks"
	leasesDir = "leases"
	lockName  = "lock-"
	leaseName = "lease-"
)

// Semaphore is a distributed counting semaphore, wire-compatible with
// Curator's InterProcessSemaphoreV2 (see the package doc for the protocol).
// It is safe for concurrent use; its Leases are independent handles.
type Semaphore struct {
	client    *framework.Client
	path      string
	locks     string // path/locks: the internal mutex
	leases    string // path/leases: one node per lease
	countPath string // the SharedCount node, "" for a fixed maximum
	fixed     int    // the fixed maximum, 0 with a shared count
	id        []byte
	lease     time.Duration // each lease node's lease time (WithLeaseTime); 0: none
	meter     *metrics.Recipe

	life   context.Context // cancelled by Close: ends waits in progress
	cancel context.CancelFunc
	wg     sync.WaitGroup // the count follower

	maxMu      sync.Mutex
	max        int
	known      bool          // max has been read (always, for a fixed maximum)
	maxChanged chan struct{} // closed and replaced when max changes

	mu     sync.Mutex
	held   map[*ihold.Hold]struct{}
	closed bool
}

// New returns a semaphore on path whose maximum is maxLeases. As in Curator,
// nothing checks that every process uses the same maximum: make sure they
// do, or use NewShared.
func New(client *framework.Client, path string, maxLeases int, opts ...Option) (*Semaphore, error) {
	if client == nil {
		return nil, fmt.Errorf("semaphore: %w", ErrNilClient)
	}
	if maxLeases < 1 {
		return nil, fmt.Errorf("%w: %d", ErrInvalidMax, maxLeases)
	}
	s, err := newSemaphore(client, path, opts)
	if err != nil {
		return nil, err
	}
	s.fixed, s.max, s.known = maxLeases, maxLeases, true
	return s, nil
}

// NewShared returns a semaphore on path whose maximum is the value of the
// Curator SharedCount node at countPath (a 4-byte big-endian integer; see
// SetCount). The semaphore follows the node with a watch until Close:
// raising the count lets waiting acquirers in, lowering it makes new
// acquirers wait. Until the node exists and holds a count, acquirers wait.
func NewShared(client *framework.Client, path, countPath string, opts ...Option) (*Semaphore, error) {
	if client == nil {
		return nil, fmt.Errorf("semaphore: %w", ErrNilClient)
	}
	if err := framework.ValidateRecipePath(countPath); err != nil {
		return nil, fmt.Errorf("semaphore: count path: %w", err)
	}
	s, err := newSemaphore(client, path, opts)
	if err != nil {
		return nil, err
	}
	s.countPath = countPath
	s.wg.Add(1)
	go s.follow()
	return s, nil
}

func newSemaphore(client *framework.Client, path string, opts []Option) (*Semaphore, error) {
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, fmt.Errorf("semaphore: %w", err)
	}
	cfg, err := option.Build("semaphore", []option.Name{option.ParticipantID, option.LeaseTime}, opts)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckQueueID(client, "semaphore", framework.Join(path, leasesDir), leaseName); err != nil {
		return nil, err
	}
	if err := cfg.CheckQueueID(client, "semaphore", framework.Join(path, locksDir), lockName); err != nil {
		return nil, err
	}
	s := &Semaphore{
		client:     client,
		path:       path,
		locks:      framework.Join(path, locksDir),
		leases:     framework.Join(path, leasesDir),
		id:         cfg.ID,
		lease:      cfg.Lease,
		meter:      fwlink.Of(client).Metrics().Recipe(cfg.KindOr(metrics.Semaphore), path),
		maxChanged: make(chan struct{}),
		held:       map[*ihold.Hold]struct{}{},
	}
	s.life, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Path returns the semaphore's path.
func (s *Semaphore) Path() string { return s.path }

// MaxLeases returns the maximum number of leases: the fixed one at once, the
// shared count as last read, waiting until it has been read once, ctx ends,
// or the Semaphore or its client is closed (ErrClosed: the count will not be
// read any more).
func (s *Semaphore) MaxLeases(ctx context.Context) (int, error) {
	if err := errs.NilContext(ctx, "semaphore "+s.path); err != nil {
		return 0, err
	}
	clientClosing := fwlink.Of(s.client).Closing()
	for {
		max, known, changed := s.currentMax()
		if known {
			return max, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-s.life.Done():
			return 0, ErrClosed
		case <-clientClosing:
			return 0, ErrClosed
		}
	}
}

// Acquire blocks until it holds n leases, ctx ends (its deadline is the
// timeout), or the Semaphore is closed. It returns all n leases or none:
// whatever it took before failing is returned. Release each lease when
// done (any goroutine may).
func (s *Semaphore) Acquire(ctx context.Context, n int) ([]*hold.Hold, error) {
	return s.acquire(ctx, n, false)
}

// TryAcquire takes n leases only if they are free at once, else it returns
// ErrWouldBlock and leaves nothing behind. It does not queue behind a waiting
// Acquire, so it fails while anyone waits for room; it may also fail when
// several processes try for the last free leases at the same moment. ctx
// bounds the round trips.
func (s *Semaphore) TryAcquire(ctx context.Context, n int) ([]*hold.Hold, error) {
	return s.acquire(ctx, n, true)
}

func (s *Semaphore) acquire(ctx context.Context, n int, try bool) (_ []*hold.Hold, err error) {
	if err := s.check(ctx, n); err != nil {
		return nil, err
	}
	start := time.Now()
	defer func(ctx context.Context) { s.meter.Acquire(ctx, start, err) }(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.life, cancel)
	defer stop()
	for {
		g, err := s.attempt(ctx, n, try)
		if err == nil {
			return s.adopt(g)
		}
		switch {
		case s.life.Err() != nil || s.client.Closed():
			return nil, contend.Err(err, true)
		// contend.ErrSessionLost: the nodes of the attempt (lease or
		// internal lock) are gone or belong to a session that is (being)
		// replaced; the acquire starts over. Never returned to callers.
		case errors.Is(err, contend.ErrSessionLost) && ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, contend.ErrSessionLost):
			s.client.Logger().Info("zookeeper semaphore: lease nodes lost while acquiring; starting over", "path", s.path, "err", err)
			continue
		}
		return nil, contend.Err(err, false)
	}
}

// check refuses bad input and a closed semaphore before anything is sent.
func (s *Semaphore) check(ctx context.Context, n int) error {
	if err := errs.NilContext(ctx, "semaphore "+s.path); err != nil {
		return err
	}
	switch {
	case n < 1:
		return fmt.Errorf("%w: %d", ErrInvalidCount, n)
	case s.fixed > 0 && n > s.fixed:
		return fmt.Errorf("%w: %d of %d", ErrTooMany, n, s.fixed)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.client.Closed() {
		return ErrClosed
	}
	return nil
}

// attempt is one try at n leases under one session: Curator's algorithm,
// with the internal mutex held across all n (none with try).
func (s *Semaphore) attempt(ctx context.Context, n int, try bool) (_ *grant, err error) {
	c := s.client
	sess, err := c.WaitConnected(ctx)
	if err != nil {
		return nil, err
	}
	if !try {
		lock, lerr := contend.Enter(ctx, contend.Request{
			Client: c, Dir: s.locks, Name: lockName, Data: s.id, Driver: contend.First(1),
		})
		if lerr != nil {
			return nil, lerr
		}
		// Runs last: the lease nodes of a failed attempt are deleted first,
		// so the next holder of the mutex does not count them.
		defer s.unlock(lock)
		sess = lock.Session
	}
	var nodes []*fwlink.Queued
	defer func() {
		if err != nil {
			for _, q := range nodes {
				s.remove(q.Path, q.Owner)
			}
		}
	}()
	for len(nodes) < n {
		q, err := fwlink.Of(c).Enqueue(ctx, framework.Join(s.leases, leaseName), s.id)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, q)
		if q.Owner != sess.ID {
			return nil, fmt.Errorf("%w: lease node %s made under session 0x%x, not 0x%x", contend.ErrSessionLost, q.Path, q.Owner, sess.ID)
		}
		err = s.waitRoom(ctx, sess, q, try, n-len(nodes))
		q.Children = nil // not kept while the lease is held: a listing is N names
		if err != nil {
			return nil, err
		}
	}
	trusted, err := s.verify(ctx, nodes)
	if err != nil {
		return nil, err
	}
	return &grant{nodes: nodes, session: trusted}, nil
}

// grant is what a successful attempt hands to adopt: the lease nodes, and
// the session that owns them and that the leases' loss signals follow.
type grant struct {
	nodes   []*fwlink.Queued
	session conn.Session
}

// waitRoom waits until the leases directory has at most max children, ours
// included (Curator counts every child), watching the directory. A try
// also fails at once when the same list leaves no room for the more leases
// it still has to take, rather than create them only to delete them.
func (s *Semaphore) waitRoom(ctx context.Context, sess conn.Session, q *fwlink.Queued, try bool, more int) error {
	c := s.client
	name := framework.Base(q.Path)
	kids := q.Children // listed right behind our create
	var watch <-chan zk.Event
	list := func() (err error) {
		kids, _, watch, err = c.ChildrenW(ctx, s.leases)
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("%w: %s is gone", contend.ErrSessionLost, s.leases)
		}
		return err
	}
	for {
		if !slices.Contains(kids, name) {
			return fmt.Errorf("%w: lease node %s is gone", contend.ErrSessionLost, q.Path)
		}
		max, known, changed := s.currentMax()
		if known && len(kids) <= max {
			if try && len(kids)+more > max {
				return errNoRoom
			}
			return nil
		}
		if try {
			return errNoRoom
		}
		if watch == nil {
			if err := list(); err != nil {
				return err
			}
			continue
		}
		select {
		case ev := <-watch:
			if err := contend.WatchEnded(ctx, s.leases, ev); err != nil {
				return err
			}
			if err := list(); err != nil { // the children changed: look again
				return err
			}
		case <-changed:
			// The maximum changed: decide again on the same list (the watch
			// has not fired, so it is current).
		case <-sess.Lost:
			return fmt.Errorf("%w: session lost while waiting for room", contend.ErrSessionLost)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// verify is the grant, the contenders engine's own (contend.Trust): the
// leases are handed out only under a session that owns every node and that
// the error policy still trusts.
func (s *Semaphore) verify(ctx context.Context, nodes []*fwlink.Queued) (conn.Session, error) {
	paths := make([]string, len(nodes))
	for i, q := range nodes {
		paths[i] = q.Path
	}
	return contend.Trust(ctx, s.client, nodes[0].Owner, paths...)
}

// adopt turns granted nodes into leases, unless the Semaphore was closed
// meanwhile or a node lost trust already.
func (s *Semaphore) adopt(g *grant) ([]*hold.Hold, error) {
	leases := make([]*hold.Hold, 0, len(g.nodes))
	nodes := make([]*ihold.Node, len(g.nodes))
	var lost error
	for i, q := range g.nodes {
		n := ihold.NewNode(s.client, &contend.Entry{Path: q.Path, Czxid: q.Czxid, Session: g.session}, false, s.meter)
		if s.lease > 0 {
			n.Lease(s.lease)
		}
		nodes[i] = n
		h, err := ihold.NewHold(n, func(h *ihold.Hold) error { s.forget(h); return n.Release() })
		if err != nil {
			if lost == nil {
				lost = err // never hand out a lost lease
			}
			continue
		}
		leases = append(leases, (*hold.Hold)(h))
	}
	s.mu.Lock()
	if s.closed || lost != nil {
		s.mu.Unlock()
		for _, n := range nodes {
			_ = n.Release()
		}
		if lost != nil {
			return nil, lost
		}
		return nil, ErrClosed
	}
	s.pruneLocked()
	for _, l := range leases {
		s.held[(*ihold.Hold)(l)] = struct{}{}
	}
	s.mu.Unlock()
	return leases, nil
}

// pruneLocked forgets the leases whose lease time ran out: their nodes are
// deleted already, and their holders may never release them (that is what
// the lease is for), so a long-lived Semaphore must not keep them. A
// Release of one still reports the lease's end. Called with s.mu held.
func (s *Semaphore) pruneLocked() {
	if s.lease <= 0 {
		return
	}
	for l := range s.held {
		if errors.Is(l.Err(), ErrLeaseExpired) {
			delete(s.held, l)
		}
	}
}

// unlock releases the internal mutex, after the deletes of the lease nodes
// of a failed attempt.
func (s *Semaphore) unlock(lock *contend.Entry) { s.remove(lock.Path, lock.Session.ID) }

// remove leaves a node of ours (contend.Leave): while its session is the
// current one and the link is up, the delete is only sent; ZooKeeper
// applies it before anything this client sends next, so a retry cannot
// count the node, and the next holder of the internal mutex is woken by the
// delete itself.
func (s *Semaphore) remove(path string, owner int64) {
	if err := contend.Leave(s.client, path, owner); err != nil {
		s.client.Logger().Warn("zookeeper semaphore: cannot delete node", "path", path, "err", err)
	}
}

func (s *Semaphore) forget(l *ihold.Hold) {
	s.mu.Lock()
	delete(s.held, l)
	s.mu.Unlock()
}

// Leases returns the leases taken through this Semaphore, by any goroutine,
// and not released yet (nor ended by their lease time), in no particular order (as Curator's
// InterProcessSemaphoreMutex's isAcquiredInThisProcess, for any number of
// leases). A semaphore's leases belong to no goroutine, so it has no Held
// in the mutex's per-goroutine sense.
func (s *Semaphore) Leases() []*hold.Hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	out := make([]*hold.Hold, 0, len(s.held))
	for l := range s.held {
		out = append(out, (*hold.Hold)(l))
	}
	return out
}

// ParticipantNodes returns the lease nodes in sequence order (full paths).
// As Curator's getParticipantNodes, they include the node of an acquirer
// that is waiting for room (at most one: it holds the internal mutex).
func (s *Semaphore) ParticipantNodes(ctx context.Context) ([]string, error) {
	nodes, err := contend.Nodes(ctx, s.client, s.leases, leaseName)
	return nodes, contend.Err(err, false)
}

// Participants returns the participant ids (node data) of the lease nodes
// in sequence order (see ParticipantNodes). Curator's leases carry its
// default node data, the host's address.
func (s *Semaphore) Participants(ctx context.Context) ([]string, error) {
	ids, err := contend.Participants(ctx, s.client, s.leases, leaseName)
	return ids, contend.Err(err, false)
}

// Close ends waits in progress with ErrClosed, closes every lease still
// held (deleting its node) and stops following the shared count. Further
// acquires return ErrClosed; releasing a lease afterwards returns an error
// matching both ErrReleased and ErrClosed.
// No goroutine of the Semaphore survives Close. The client is not closed.
func (s *Semaphore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	held := s.held
	s.held = map[*ihold.Hold]struct{}{}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	var errs []error
	for l := range held {
		if err := l.ReleaseAtClose(); err != nil && !errors.Is(err, ErrHoldLost) && !errors.Is(err, ErrReleased) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
