// Package lease is the counting semaphore of Curator's
// InterProcessSemaphoreV2 (its wire layout: path/locks, a mutex that
// admits one acquirer at a time, and path/leases, a node per lease), the
// engine under package semaphore and mutex.SemaphoreMutex (a semaphore of
// one lease). Those recipes are faces that check their input and options
// and name themselves in errors and metrics; a semaphore of your own (a
// maximum read from a node of your own format, see Config.DecodeMax) can
// be one too.
package lease

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// errNoRoom is the semaphore's zkrecipes.ErrWouldBlock.
var errNoRoom = fmt.Errorf("not enough leases free: %w", zkrecipes.ErrWouldBlock)

// Curator's names (InterProcessSemaphoreV2, InterProcessMutex).
const (
	locksDir  = "locks"
	leasesDir = "leases"
	lockName  = "lock-"
	leaseName = "lease-"
)

// Semaphore is a distributed counting semaphore, wire-compatible with
// Curator's InterProcessSemaphoreV2 (package semaphore documents the
// protocol). It is safe for concurrent use; its holds are independent
// handles.
type Semaphore struct {
	client    *framework.Client
	recipe    string // names the recipe in its errors
	path      string
	locks     string // path/locks: the internal mutex
	leases    string // path/leases: one node per lease
	countPath string // the SharedCount node, "" for a fixed maximum
	decode    func([]byte) (int, error)
	fixed     int // the fixed maximum, 0 with a shared count
	id        []byte
	lease     time.Duration // each lease node's lease time (WithLeaseTime); 0: none
	meter     *framework.RecipeMeter
	kind      string

	// rt is the semaphore's lifecycle: its closed state, the contexts of
	// the acquires in progress and the count follower, which its Close
	// ends.
	rt *framework.Runtime

	maxMu      sync.Mutex
	max        int
	known      bool          // max has been read (always, for a fixed maximum)
	maxChanged chan struct{} // closed and replaced when max changes

	mu   sync.Mutex
	held map[*hold.Hold]struct{}
	// closing: the leases Close took from held to give back; their
	// release callbacks say hold.ErrReleasedByClose.
	closing map[*hold.Hold]struct{}
}

// Config is a Semaphore's, checked by its recipe.
type Config struct {
	// Recipe names it in errors, Kind in the metrics.
	Recipe string
	Kind   string
	Path   string
	// CountPath is the node whose data is the maximum (Curator's
	// SharedCount), or "" for the fixed Max. It is followed with a watch:
	// a change applies to the next acquire, and while the node is missing
	// or unreadable the last maximum read stays in force.
	CountPath string
	// DecodeMax reads the maximum from CountPath's data (for Curator's
	// SharedCount, a 4-byte big-endian int: shared.DecodeCount). Data it
	// refuses is logged and ignored. Required with a CountPath.
	DecodeMax func(data []byte) (int, error)
	Max       int
	// ID is the data of its lease nodes; LeaseTime, if positive, each
	// lease's lease time.
	ID        []byte
	LeaseTime time.Duration
}

// New returns a semaphore as cfg says. With a CountPath it follows the
// node with a watch until Close.
func New(client *framework.Client, cfg Config) *Semaphore {
	s := &Semaphore{
		client:     client,
		recipe:     cfg.Recipe,
		path:       cfg.Path,
		locks:      framework.Join(cfg.Path, locksDir),
		leases:     framework.Join(cfg.Path, leasesDir),
		id:         cfg.ID,
		lease:      cfg.LeaseTime,
		kind:       cfg.Kind,
		meter:      client.RecipeMeter(cfg.Kind, cfg.Path),
		maxChanged: make(chan struct{}),
		held:       map[*hold.Hold]struct{}{},
		rt:         framework.NewRuntime(client, cfg.Recipe, cfg.Path),
	}
	if cfg.CountPath == "" {
		s.fixed, s.max, s.known = cfg.Max, cfg.Max, true
		return s
	}
	s.countPath, s.decode = cfg.CountPath, cfg.DecodeMax
	if s.decode == nil {
		s.decode = func([]byte) (int, error) {
			return 0, fmt.Errorf("%w: no DecodeMax for the count at %s", zkrecipes.ErrInvalidArgument, cfg.CountPath)
		}
	}
	s.rt.Go(s.follow) // false only once the client is closed: MaxLeases says so
	return s
}

// err names the recipe and its path in err.
func (s *Semaphore) err(err error) error { return s.rt.Err(err) }

// Path returns the semaphore's path.
func (s *Semaphore) Path() string { return s.path }

// MaxLeases returns the maximum number of leases: the fixed one at once, the
// shared count as last read, waiting until it has been read once, ctx ends,
// or the Semaphore or its client is closed (zkrecipes.ErrClosed: the count will not be
// read any more).
func (s *Semaphore) MaxLeases(ctx context.Context) (int, error) {
	if ctx == nil {
		return 0, s.err(zkrecipes.ErrNilContext)
	}
	max, known, changed := s.currentMax()
	if known {
		return max, nil
	}
	wctx, cancel, err := s.rt.Within(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	for {
		select {
		case <-changed:
		case <-wctx.Done():
			if err := ctx.Err(); err != nil {
				return 0, s.err(err)
			}
			return 0, s.err(zkrecipes.ErrClosed)
		}
		if max, known, changed = s.currentMax(); known {
			return max, nil
		}
	}
}

// Acquire blocks until it holds n leases, ctx ends (its deadline is the
// timeout), or the Semaphore is closed. It returns all n leases or none:
// whatever it took before failing is returned. Release each lease when
// done (any goroutine may).
func (s *Semaphore) Acquire(ctx context.Context, n int) ([]*hold.Hold, error) {
	hs, err := s.acquire(ctx, n, false)
	return hs, s.err(err)
}

// TryAcquire takes n leases only if they are free at once, else it returns
// zkrecipes.ErrWouldBlock and leaves nothing behind. It does not queue behind a waiting
// Acquire, so it fails while anyone waits for room; it may also fail when
// several processes try for the last free leases at the same moment. ctx
// bounds the round trips.
func (s *Semaphore) TryAcquire(ctx context.Context, n int) ([]*hold.Hold, error) {
	hs, err := s.acquire(ctx, n, true)
	return hs, s.err(err)
}

func (s *Semaphore) acquire(ctx context.Context, n int, try bool) (_ []*hold.Hold, err error) {
	if ctx == nil {
		return nil, zkrecipes.ErrNilContext
	}
	if err := s.check(n); err != nil {
		return nil, err
	}
	// Refused before it is measured, as before anything is sent.
	wctx, cancel, err := s.rt.Within(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	start := time.Now()
	defer func(ctx context.Context) { s.meter.Acquire(ctx, start, err) }(ctx)
	ctx = wctx
	for {
		g, err := s.attempt(ctx, n, try)
		if err == nil {
			hs, err := s.adopt(g)
			if errors.Is(err, zkrecipes.ErrHoldLost) && ctx.Err() == nil && !s.client.Closed() {
				// Lost between their grant and their hand-over (a freeze
				// longer than the session's bound): never held, so try
				// again, as for a session lost while acquiring.
				continue
			}
			if err == nil && (s.rt.Closed() || s.client.Closed()) && slices.ContainsFunc(hs, func(h *hold.Hold) bool { return h.Err() != nil }) {
				// A Close after adopt released them: never the caller's
				// to use.
				return nil, zkrecipes.ErrClosed
			}
			return hs, err
		}
		switch {
		case s.rt.Closed() || s.client.Closed():
			return nil, engine.Err(err, true)
		// zkrecipes.ErrSessionLost: the nodes of the attempt (lease or
		// internal lock) are gone or belong to a session that is (being)
		// replaced; the acquire starts over. Never returned to callers.
		case errors.Is(err, zkrecipes.ErrSessionLost) && ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, zkrecipes.ErrSessionLost):
			s.client.Logger().Info("zookeeper semaphore: lease nodes lost while acquiring; starting over", "path", s.path, "err", err)
			continue
		}
		return nil, engine.Err(err, false)
	}
}

// check refuses bad input before anything is sent (Within refuses a
// closed semaphore).
func (s *Semaphore) check(n int) error {
	switch {
	case n < 1:
		return fmt.Errorf("%w: %d leases: must be at least 1", zkrecipes.ErrInvalidArgument, n)
	case s.fixed > 0 && n > s.fixed:
		return fmt.Errorf("%w: %d leases of at most %d: it could never succeed", zkrecipes.ErrInvalidArgument, n, s.fixed)
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
		lock, lerr := engine.Enter(ctx, engine.Request{
			Client: c, Dir: s.locks, Name: lockName, Data: s.id, Driver: engine.First(1),
		})
		if lerr != nil {
			return nil, lerr
		}
		// Runs last: the lease nodes of a failed attempt are deleted first,
		// so the next holder of the mutex does not count them.
		defer s.unlock(lock)
		sess = lock.Session
	}
	var nodes []*framework.Queued
	defer func() {
		if err != nil {
			for _, q := range nodes {
				s.remove(q.Path, q.Owner)
			}
		}
	}()
	for len(nodes) < n {
		q, err := c.Enqueue(ctx, framework.Join(s.leases, leaseName), s.id)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, q)
		if q.Owner != sess.ID {
			return nil, fmt.Errorf("%w: lease node %s made under session 0x%x, not 0x%x", zkrecipes.ErrSessionLost, q.Path, q.Owner, sess.ID)
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
	nodes   []*framework.Queued
	session conn.Session
}

// waitRoom waits until the leases directory has at most max children, ours
// included (Curator counts every child), watching the directory. A try
// also fails at once when the same list leaves no room for the more leases
// it still has to take, rather than create them only to delete them.
func (s *Semaphore) waitRoom(ctx context.Context, sess conn.Session, q *framework.Queued, try bool, more int) error {
	c := s.client
	name := framework.Base(q.Path)
	kids := q.Children // listed right behind our create
	var watch <-chan zk.Event
	list := func() (err error) {
		kids, _, watch, err = c.ChildrenW(ctx, s.leases)
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("%w: %s is gone", zkrecipes.ErrSessionLost, s.leases)
		}
		return err
	}
	for {
		if !slices.Contains(kids, name) {
			return fmt.Errorf("%w: lease node %s is gone", zkrecipes.ErrSessionLost, q.Path)
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
			if err := engine.WatchEnded(ctx, s.leases, ev); err != nil {
				return err
			}
			if err := list(); err != nil { // the children changed: look again
				return err
			}
		case <-changed:
			// The maximum changed: decide again on the same list (the watch
			// has not fired, so it is current).
		case <-sess.Lost:
			return fmt.Errorf("%w: session lost while waiting for room", zkrecipes.ErrSessionLost)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// verify is the grant, the contenders engine's own (engine.Trust): the
// leases are handed out only under a session that owns every node and that
// the error policy still trusts.
func (s *Semaphore) verify(ctx context.Context, nodes []*framework.Queued) (conn.Session, error) {
	paths := make([]string, len(nodes))
	for i, q := range nodes {
		paths[i] = q.Path
	}
	return engine.Trust(ctx, s.client, nodes[0].Owner, paths...)
}

// adopt turns granted nodes into leases, unless the Semaphore was closed
// meanwhile or a node lost trust already. Close marks the Runtime closed
// before its release (releaseAll) takes s.mu to empty s.held, and adopt
// checks and records under s.mu: so either adopt ran first, and
// releaseAll finds the leases in s.held and releases them, or adopt sees
// the semaphore closed and releases the nodes itself, never handing them
// out. No node is left held, and no lease is handed out after Close.
func (s *Semaphore) adopt(g *grant) ([]*hold.Hold, error) {
	leases := make([]*hold.Hold, 0, len(g.nodes))
	nodes := make([]*engine.Node, len(g.nodes))
	var lost error
	for i, q := range g.nodes {
		n := engine.Follow(s.client, engine.Grant{Path: q.Path, Token: q.Czxid, Session: g.session}, engine.WithMetrics(s.kind, s.path), engine.WithRecipe(s.recipe, s.path))
		if s.lease > 0 {
			_ = n.Lease(s.lease) // positive: checked by the recipe
		}
		nodes[i] = n
		h, err := n.NewHold(func(h *hold.Hold) error {
			if s.forget(h) {
				return errors.Join(hold.ErrReleasedByClose, n.Release())
			}
			return n.Release()
		})
		if err != nil {
			if lost == nil {
				lost = err // never hand out a lost lease
			}
			continue
		}
		leases = append(leases, (*hold.Hold)(h))
	}
	s.mu.Lock()
	if s.rt.Closed() || lost != nil {
		s.mu.Unlock()
		for _, n := range nodes {
			_ = n.Release()
		}
		if lost != nil {
			return nil, lost
		}
		return nil, zkrecipes.ErrClosed
	}
	s.pruneLocked()
	for _, l := range leases {
		s.held[l] = struct{}{}
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
		if errors.Is(l.Err(), zkrecipes.ErrLeaseExpired) {
			delete(s.held, l)
		}
	}
}

// unlock releases the internal mutex, after the deletes of the lease nodes
// of a failed attempt.
func (s *Semaphore) unlock(lock *engine.Grant) { s.remove(lock.Path, lock.Session.ID) }

// remove leaves a node of ours (engine.Leave): while its session is the
// current one and the link is up, the delete is only sent; ZooKeeper
// applies it before anything this client sends next, so a retry cannot
// count the node, and the next holder of the internal mutex is woken by the
// delete itself.
func (s *Semaphore) remove(path string, owner int64) {
	if err := engine.Leave(s.client, path, owner); err != nil {
		s.client.Logger().Warn("zookeeper semaphore: cannot delete node", "path", path, "err", err)
	}
}

// forget forgets l, and says whether Close is giving it back.
func (s *Semaphore) forget(l *hold.Hold) (byClose bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, l)
	_, byClose = s.closing[l]
	return byClose
}

// Leases returns the leases taken through this Semaphore, by any goroutine,
// and not released yet (nor ended by their lease time), in no particular order (as Curator's
// InterProcessSemaphoreMutex's isAcquiredInThisProcess, for any number of
// leases). A semaphore's leases belong to no goroutine, so it has no Held
// in the mutex's per-goroutine sense.
func (s *Semaphore) Holds() []*hold.Hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	out := make([]*hold.Hold, 0, len(s.held))
	for l := range s.held {
		out = append(out, l)
	}
	return out
}

// ParticipantNodes returns the lease nodes in sequence order (full paths).
// As Curator's getParticipantNodes, they include the node of an acquirer
// that is waiting for room (at most one: it holds the internal mutex).
func (s *Semaphore) ParticipantNodes(ctx context.Context) ([]string, error) {
	if err := engine.CheckCall(s.client, ctx); err != nil {
		return nil, s.err(err)
	}
	nodes, err := engine.Nodes(ctx, s.client, s.leases, leaseName)
	return nodes, s.err(engine.Err(err, false))
}

// Participants returns the participant ids (node data) of the lease nodes
// in sequence order (see ParticipantNodes). Curator's leases carry its
// default node data, the host's address.
func (s *Semaphore) Participants(ctx context.Context) ([]string, error) {
	if err := engine.CheckCall(s.client, ctx); err != nil {
		return nil, s.err(err)
	}
	ids, err := engine.Participants(ctx, s.client, s.leases, leaseName)
	return ids, s.err(engine.Err(err, false))
}

// Close ends waits in progress with zkrecipes.ErrClosed, closes every lease still
// held (deleting its node) and stops following the shared count. Further
// acquires return zkrecipes.ErrClosed; releasing a lease afterwards returns an error
// matching both zkrecipes.ErrReleased and zkrecipes.ErrClosed.
// No goroutine of the Semaphore survives Close. The client is not closed.
func (s *Semaphore) Close() error {
	return s.rt.Close(func(context.Context) error { return s.releaseAll() })
}

// releaseAll closes every lease still held, for Close (see adopt), once
// the count follower has ended.
func (s *Semaphore) releaseAll() error {
	s.mu.Lock()
	held := s.held
	s.held = map[*hold.Hold]struct{}{}
	s.closing = held
	s.mu.Unlock()
	var errs []error
	for l := range held {
		if err := l.Release(); err != nil && !errors.Is(err, zkrecipes.ErrHoldLost) && !errors.Is(err, zkrecipes.ErrReleased) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CheckID says why id cannot be the participant id of a semaphore on path:
// its lease and lock nodes' creates would be over the client's request
// size limit.
func CheckID(c *framework.Client, path string, id []byte) error {
	if err := engine.CheckData(c, framework.Join(path, leasesDir), id, leaseName); err != nil {
		return err
	}
	return engine.CheckData(c, framework.Join(path, locksDir), id, lockName)
}
