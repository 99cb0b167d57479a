package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/retry"
)

// DeleteOption modifies one Delete. It has the module's one option shape
// (see Option).
type DeleteOption interface{ applyDelete(*deleteOptions) }

type deleteOption func(*deleteOptions)

func (f deleteOption) applyDelete(o *deleteOptions) { f(o) }

type deleteOptions struct {
	guaranteed bool
	children   bool
	once       bool
	background bool
	deferred   bool
	owned      bool
	owner      int64
}

// Guaranteed makes a delete that fails for connection reasons (or because
// ctx ended) go on in the background until the node is gone, as Curator's
// guaranteed(). The call still returns the error, joined with zkrecipes.ErrDeferred.
// With WithChildren the background delete deletes the children too, as
// Curator's guaranteed().deletingChildrenIfNeeded().
func Guaranteed() DeleteOption { return deleteOption(func(o *deleteOptions) { o.guaranteed = true }) }

// WithChildren deletes the node's children first, recursively, as Curator's
// deletingChildrenIfNeeded.
func WithChildren() DeleteOption { return deleteOption(func(o *deleteOptions) { o.children = true }) }

// DeleteAtMostOnce sends the delete at most once: after a reply that may
// have been lost (the link dropped while it was on its way, the client
// closed, or ctx ended after it was handed to the connection) it is not
// sent again, and the error wraps zkrecipes.ErrOutcomeUnknown: the node may or may
// not have been deleted. Read to find out before deleting again (a node's
// czxid tells one incarnation from the next). Without it, a delete resent
// after a lost reply fails with zk.ErrNoNode though it was applied, or,
// if another client made the node again in between, deletes that one too:
// a version does not tell incarnations apart (each starts at 0). It
// combines with no other delete option: each of them sends again.
func DeleteAtMostOnce() DeleteOption { return deleteOption(func(o *deleteOptions) { o.once = true }) }

// InBackground returns as soon as the delete is on its way to the server,
// not when it is answered, as Curator's inBackground(): ZooKeeper applies
// one session's requests in order, so the delete takes effect before
// anything this client sends afterwards, and a caller that goes on at once
// (a lock's next contender, a retry) never finds its own old node in the
// way. It implies Guaranteed: if the answer is a connection problem the
// delete goes on in the background, which Drain and Close wait for. ctx
// bounds only the wait to see the request sent; if it ends first the call
// returns its error joined with zkrecipes.ErrDeferred and the delete goes
// on all the same. With OwnedBy, see there.
func InBackground() DeleteOption {
	return deleteOption(func(o *deleteOptions) { o.background = true })
}

// Deferred hands the delete to the client's background deleter and returns
// at once, nil unless the input is bad or the client closed: for the
// cleanup of a call that failed, whose ctx may be over (it is not waited
// on). The deleter retries, backing off, until the node is gone or the
// answer says retrying cannot help (a bad version, children, no
// permission: logged); PendingDeletes lists it meanwhile, Drain waits for
// it, and Close waits for it up to the drain timeout. Unlike InBackground,
// nothing orders it before what this client sends next.
func Deferred() DeleteOption { return deleteOption(func(o *deleteOptions) { o.deferred = true }) }

// OwnedBy makes the delete one of the node session made: the way a
// recipe leaves its own ephemeral node, and never a node that another
// session has made at path since (a blind delete would take it). It
// takes version -1 and one of InBackground or Deferred:
//
//   - With Deferred, the background deleter reads the node first and
//     deletes it, by the version it read, only while it is an ephemeral of
//     session: once that session is gone, so is the node.
//   - With InBackground, while session is the client's current session and
//     the link is up, the node is taken to be the caller's own (it made it
//     on this session) and the delete is sent at once, unlooked, as
//     InBackground says; the wait to see it sent is bounded by ctx and by
//     the client's release timeout (WithReleaseTimeout), whichever ends
//     first. Otherwise the node may belong to a session being replaced, and
//     it goes to the background deleter as with Deferred, and the call
//     returns at once.
func OwnedBy(session int64) DeleteOption {
	return deleteOption(func(o *deleteOptions) { o.owned, o.owner = true, session })
}

// validate refuses, before anything is sent, the options that ask for two
// things at once.
func (o deleteOptions) validate(version int32) error {
	bad := func(why string) error { return fmt.Errorf("%w: %s", zkrecipes.ErrInvalidArgument, why) }
	switch {
	case o.once && (o.guaranteed || o.children || o.background || o.deferred || o.owned):
		return bad("DeleteAtMostOnce with an option that sends again")
	case o.background && o.deferred:
		return bad("InBackground with Deferred: the one waits to see the delete sent, the other does not")
	case o.children && (o.background || o.deferred):
		return bad("WithChildren with InBackground or Deferred: only a delete answered in the call deletes children")
	case o.owned && o.owner == 0:
		return bad("OwnedBy session 0, which owns no node")
	case o.owned && !o.background && !o.deferred:
		return bad("OwnedBy without InBackground or Deferred")
	case o.owned && version != -1:
		return bad(fmt.Sprintf("OwnedBy with version %d: it deletes the owner's node, whatever its version (pass -1)", version))
	}
	return nil
}

// Delete removes the node at path if its version is version (-1: any).
// Without options it is sent, retried under the client's policy, and
// answered before it returns; the options say otherwise (Curator's
// delete().guaranteed().deletingChildrenIfNeeded().inBackground()):
// Guaranteed, WithChildren, DeleteAtMostOnce, InBackground, Deferred and
// OwnedBy. Options that contradict each other fail with
// zkrecipes.ErrInvalidArgument before anything is sent.
func (c *Client) Delete(ctx context.Context, path string, version int32, opts ...DeleteOption) error {
	var o deleteOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyDelete(&o)
		}
	}
	if err := c.check(ctx, "delete", path, false); err != nil {
		return err
	}
	if path == "/" {
		return opErr("delete", path, fmt.Errorf("%w: cannot delete the root", zkrecipes.ErrInvalidArgument))
	}
	if err := o.validate(version); err != nil {
		return opErr("delete", path, err)
	}
	switch {
	case o.deferred:
		c.deleter.enqueue(deleteJob{path: path, version: version, owner: o.owner})
		return nil
	case o.background && o.owned:
		return c.deleteOwned(ctx, path, o.owner)
	case o.background:
		return c.deleteAsync(ctx, path, version, 0)
	case o.once:
		_, err := sendOnce(c, ctx, "delete", path, func(z *zk.Conn) (struct{}, error) {
			return struct{}{}, c.deleteOnce(z, path, version, false)
		})
		return err
	}
	err := c.do(ctx, "delete", path, func(z *zk.Conn) error {
		return c.deleteOnce(z, path, version, o.children)
	})
	if err != nil && o.guaranteed && deleteUnfinished(err) {
		c.deleter.enqueue(deleteJob{path: path, version: version, children: o.children})
		return errors.Join(err, zkrecipes.ErrDeferred)
	}
	return err
}

// deleteAsync is Delete with InBackground, whose wait to see the request
// sent is also bounded by limit, if positive, as a deadline on ctx would:
// a timer, not a context, for a bound every release sets. path and ctx
// are checked already.
func (c *Client) deleteAsync(ctx context.Context, path string, version int32, limit time.Duration) error {
	trace := c.conn.TraceDelete(c.ns.fix(path))
	defer trace.Close()
	done := make(chan struct{})
	c.deleter.begin()
	if !c.Go(func() {
		defer c.deleter.end()
		defer close(done)
		err := c.do(c.life, "delete", path, func(z *zk.Conn) error { return z.Delete(c.ns.fix(path), version) })
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode), errors.Is(err, zkrecipes.ErrClosed):
		case deleteUnfinished(err):
			c.deleter.enqueue(deleteJob{path: path, version: version})
		default:
			// Answered after the call returned, and refused for good (no
			// permission, a bad version): no one else will hear of it.
			c.log.Warn("zookeeper background delete failed", "path", path, "err", err)
		}
	}) {
		c.deleter.end()
		return opErr("delete", path, zkrecipes.ErrClosed)
	}
	var expired <-chan time.Time
	if limit > 0 {
		t := startTimer(limit)
		defer stopTimer(t)
		expired = t.C
	}
	select {
	case <-trace.Sent():
		return nil
	case <-done:
		return nil // answered (or handed to the background) before we saw it sent
	case <-ctx.Done():
		return opErr("delete", path, errors.Join(ctx.Err(), zkrecipes.ErrDeferred))
	case <-expired:
		return opErr("delete", path, errors.Join(context.DeadlineExceeded, zkrecipes.ErrDeferred))
	}
}

// timers are deleteAsync's stopped timers, reused: every release bounds
// its wait with one, and a new timer was three allocations a release.
// (Since Go 1.23 a stopped timer's channel holds no stale tick, so a reused
// one is as good as new.) A typed free list rather than a sync.Pool: no
// assertion from any.
var timers = make(chan *time.Timer, 64)

func startTimer(d time.Duration) *time.Timer {
	select {
	case t := <-timers:
		t.Reset(d)
		return t
	default:
		return time.NewTimer(d)
	}
}

func stopTimer(t *time.Timer) {
	t.Stop()
	select {
	case timers <- t:
	default: // enough kept
	}
}

// deleteOwned is Delete with InBackground and OwnedBy(owner) (see there).
func (c *Client) deleteOwned(ctx context.Context, path string, owner int64) error {
	if s := c.Session(); s.ID == owner && !closed(s.Suspended) {
		return c.deleteAsync(ctx, path, -1, c.release)
	}
	c.deleter.enqueue(deleteJob{path: path, version: -1, owner: owner})
	return nil
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func deleteUnfinished(err error) bool {
	return retry.Retryable(err) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing)
}

func (c *Client) deleteOnce(z *zk.Conn, path string, version int32, children bool) error {
	for {
		err := z.Delete(c.ns.fix(path), version)
		if !errors.Is(err, zk.ErrNotEmpty) || !children {
			return err
		}
		kids, _, err := z.Children(c.ns.fix(path))
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := c.deleteOnce(z, Join(path, k), -1, true); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
	}
}

// errNotYet: a background delete waits for something before it can run.
var errNotYet = errors.New("not yet")

// deleteJob is one background delete: an exact path, or every child of
// parent whose name starts with prefix (the leftovers of a protected create).
type deleteJob struct {
	path    string
	version int32
	owner   int64
	// children: delete the children first, as the call asked
	// (Guaranteed with WithChildren); never with owner.
	children bool
	parent   string
	prefix   string
	// after, if set, holds the job back until it is closed.
	after <-chan struct{}
}

func (j deleteJob) String() string {
	if j.prefix != "" {
		return Join(j.parent, j.prefix+"*")
	}
	return j.path
}

// deleter runs background deletes on one goroutine, alive only while there
// is work.
type deleter struct {
	c        *Client
	maxSleep time.Duration

	mu        sync.Mutex
	jobs      []deleteJob
	inflight  []deleteJob
	async     int // InBackground deletes not yet answered
	running   bool
	idle      chan struct{} // closed while there is no work
	abandoned bool
}

func newDeleter(c *Client, maxSleep time.Duration) *deleter {
	idle := make(chan struct{})
	close(idle)
	return &deleter{c: c, maxSleep: maxSleep, idle: idle}
}

// begin and end bracket an InBackground delete, so that drain waits for it too.
func (d *deleter) begin() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.async == 0 && !d.running {
		d.idle = make(chan struct{})
	}
	d.async++
}

func (d *deleter) end() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.async--
	d.closeIdleLocked()
}

func (d *deleter) closeIdleLocked() {
	if d.async == 0 && !d.running {
		select {
		case <-d.idle:
		default:
			close(d.idle)
		}
	}
}

func (d *deleter) enqueue(j deleteJob) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.abandoned {
		d.c.log.Warn("zookeeper delete abandoned: client closed", "path", j.String())
		return
	}
	d.jobs = append(d.jobs, j)
	if d.running {
		return
	}
	if d.async == 0 {
		d.idle = make(chan struct{})
	}
	d.running = true
	if !d.c.Go(d.loop) {
		d.running = false
		d.closeIdleLocked()
	}
}

func (d *deleter) loop() {
	sleep := 50 * time.Millisecond
	for {
		d.mu.Lock()
		jobs := d.jobs
		d.jobs, d.inflight = nil, jobs
		d.mu.Unlock()

		var failed []deleteJob
		var gate <-chan struct{} // a held-back job's: its opening ends the wait
		errored := false
		for _, j := range jobs {
			start := time.Now()
			err := d.run(j)
			if !errors.Is(err, errNotYet) {
				d.c.metrics.Request(d.c.life, metrics.OpDelete, time.Since(start), err)
			}
			switch {
			case err == nil:
				continue
			case errors.Is(err, errNotYet):
				if gate == nil {
					gate = j.after
				}
			default:
				d.c.log.Debug("zookeeper background delete will retry", "path", j.String(), "err", err)
				errored = true
			}
			failed = append(failed, j)
		}

		d.mu.Lock()
		d.jobs, d.inflight = append(failed, d.jobs...), nil
		if len(d.jobs) == 0 || d.abandoned {
			d.running = false
			d.closeIdleLocked()
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		if len(failed) == 0 {
			continue // new work arrived meanwhile
		}
		// A job only waiting for its gate is not failing: it neither backs
		// off the others nor waits out a backoff once its gate opens (it is
		// the cleanup of a node that may block a queue).
		select {
		case <-time.After(sleep):
		case <-gate:
		case <-d.c.quit:
		}
		if errored {
			sleep = min(2*sleep, d.maxSleep)
		}
	}
}

// run makes one attempt at j and returns nil when j needs nothing more.
func (d *deleter) run(j deleteJob) error {
	z := d.c.zk()
	ns := d.c.ns
	if j.after != nil {
		select {
		case <-j.after:
		default:
			return errNotYet
		}
	}
	if j.prefix != "" {
		// Sync first, so the list below sees every write the ensemble has
		// taken, a create sent over an earlier link included.
		if _, err := z.Sync(ns.fix(j.parent)); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		kids, _, err := z.Children(ns.fix(j.parent))
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if !strings.HasPrefix(k, j.prefix) {
				continue
			}
			if err := z.Delete(ns.fix(Join(j.parent, k)), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
		return nil
	}
	version := j.version
	if j.owner != 0 {
		ok, st, err := z.Exists(ns.fix(j.path))
		if err != nil {
			return err
		}
		if !ok || st.EphemeralOwner != j.owner {
			return nil // gone, or someone else's now
		}
		version = st.Version
	}
	err := d.c.deleteOnce(z, j.path, version, j.children)
	switch {
	case err == nil, errors.Is(err, zk.ErrNoNode):
		return nil
	case errors.Is(err, zk.ErrBadVersion) && j.owner != 0:
		return err // changed under us: look again
	case deleteUnfinished(err):
		return err
	default:
		// BadVersion, NotEmpty, NoAuth: retrying cannot help.
		d.c.log.Warn("zookeeper background delete gave up", "path", j.path, "err", err)
		return nil
	}
}

func (d *deleter) drain(ctx context.Context) error {
	d.mu.Lock()
	idle := d.idle
	d.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *deleter) abandon() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.abandoned = true
	for _, j := range append(append([]deleteJob(nil), d.inflight...), d.jobs...) {
		d.c.log.Warn("zookeeper delete abandoned: client closed", "path", j.String())
	}
	d.jobs = nil
}

// count is how many deletes pending lists, for the metrics.
func (d *deleter) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.inflight) + len(d.jobs)
}

func (d *deleter) pending() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, j := range append(append([]deleteJob(nil), d.inflight...), d.jobs...) {
		out = append(out, j.String())
	}
	return out
}
