package barrier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/retry"
)

// The errors of the double barrier's own misuse. The others are the
// module's (package zkrecipes: ErrClosed, ErrSessionLost, ...); every
// error a Barrier or DoubleBarrier returns names the recipe and its path
// ("double barrier /jobs/nightly: not entered") and matches its sentinel
// with errors.Is.
var (
	// ErrNotEntered: Leave without a successful Enter before it.
	ErrNotEntered = errors.New("not entered")
	// ErrAlreadyEntered: Enter while entered, or while another Enter or
	// Leave of the same DoubleBarrier runs.
	ErrAlreadyEntered = errors.New("already entered")
)

const (
	barrierRecipe = "barrier"
	doubleRecipe  = "double barrier"
)

// Barrier is Curator's DistributedBarrier: a node that, while it exists,
// blocks every Wait on it. Set and Remove may be called by any process,
// Go or Java; the node is persistent and outlives the process that set it.
// A Barrier is safe for concurrent use.
type Barrier struct {
	client *framework.Client
	path   string
	data   []byte
	rt     *framework.Runtime // its closed state, and the calls Close ends
}

// New returns the barrier at path. It sends nothing.
func New(client *framework.Client, path string, opts ...Option) (*Barrier, error) {
	if client == nil {
		return nil, framework.RecipeErr(barrierRecipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(barrierRecipe, path, err)
	}
	// The barrier node's data (Set).
	id, err := participantID(barrierRecipe, path, opts, func(id []byte) error {
		return client.CheckCreate(path, id, framework.WithParentContainers())
	})
	if err != nil {
		return nil, err
	}
	return &Barrier{client: client, path: path, data: []byte(id), rt: framework.NewRuntime(client, barrierRecipe, path)}, nil
}

// Path returns the barrier's path.
func (b *Barrier) Path() string {
	if b == nil {
		return ""
	}
	return b.path
}

// begin says why a call cannot start (b is nil or a zero Barrier, ctx is
// nil, b or its client is closed), or returns the context the call's
// requests and waits run under, which ends with ctx or at Close of b or
// of its client (framework.Runtime.Within), and its cancel, for the caller
// to call when the call returns.
func (b *Barrier) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if b == nil || b.rt == nil {
		return nil, nil, framework.Invalid(barrierRecipe, "Barrier", "New")
	}
	return b.rt.Within(ctx)
}

// named names the barrier in err.
func (b *Barrier) named(err error) error { return framework.RecipeErr(barrierRecipe, b.path, err) }

// Set makes the barrier node (and its parents, as containers) if it does
// not exist, as Curator's setBarrier. The create is sent at most once: a
// resend after a lost reply could set the barrier again after another
// client removed it. When its reply is lost, one read decides: the
// barrier standing is success (whoever set it); absent, Set cannot tell
// its own set, removed since, from a set never applied, and fails with an
// error wrapping zkrecipes.ErrOutcomeUnknown. A nil ctx is an error wrapping
// zkrecipes.ErrInvalidArgument, and nothing is sent.
func (b *Barrier) Set(ctx context.Context) error {
	wctx, cancel, err := b.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return b.named(ended(ctx, b.closed, b.set(wctx)))
}

func (b *Barrier) set(ctx context.Context) error {
	_, err := b.client.Create(ctx, b.path, b.data, framework.WithParentContainers(), framework.CreateAtMostOnce())
	switch {
	case err == nil, errors.Is(err, zk.ErrNodeExists):
		return nil
	case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
		stands, _, rerr := b.look(ctx)
		switch {
		case rerr != nil:
			return b.fail(ctx, "set", errors.Join(err, rerr))
		case stands:
			return nil
		}
		return b.fail(ctx, "set", fmt.Errorf("%w: the barrier is not there now: removed since, or never set", err))
	}
	return engine.Err(err, b.closed())
}

// Remove deletes the barrier node, if it exists, as Curator's
// removeBarrier: every Wait on it returns. The delete is sent at most once
// for the barrier it saw: a resend after a lost reply could remove a
// barrier another client set after the first delete. When its reply is
// lost, one read decides: the barrier it saw (its czxid) gone is success,
// whoever removed it; still there, the delete was not applied, and is sent
// again. A nil ctx is an error wrapping zkrecipes.ErrInvalidArgument, and
// nothing is sent.
func (b *Barrier) Remove(ctx context.Context) error {
	wctx, cancel, err := b.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return b.named(ended(ctx, b.closed, b.remove(wctx)))
}

func (b *Barrier) remove(ctx context.Context) error {
	ok, st, err := b.client.Exists(ctx, b.path)
	if err != nil {
		return engine.Err(err, b.closed())
	}
	if !ok {
		return nil
	}
	for {
		err := b.client.Delete(ctx, b.path, -1, framework.DeleteAtMostOnce())
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case !errors.Is(err, zkrecipes.ErrOutcomeUnknown):
			return engine.Err(err, b.closed())
		}
		stands, now, rerr := b.look(ctx)
		switch {
		case rerr != nil:
			return b.fail(ctx, "remove", errors.Join(err, rerr))
		case !stands || now.Czxid != st.Czxid:
			return nil // the barrier we saw is gone
		}
		// The same barrier stands: our delete was not applied.
	}
}

// look reads the barrier node after a write whose reply was lost. It syncs
// first: the write went out on a link that is gone, and the server the
// client is on now may not have applied it yet.
func (b *Barrier) look(ctx context.Context) (bool, *zk.Stat, error) {
	if err := b.client.Sync(ctx, b.path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return false, nil, err
	}
	return b.client.Exists(ctx, b.path)
}

// fail names the barrier in an error of op, preferring ctx's own error
// when ctx ended.
func (b *Barrier) fail(ctx context.Context, op string, err error) error {
	return waitErr(ctx, fmt.Errorf("%s: %w", op, engine.Err(err, b.closed())))
}

// Wait blocks until the barrier node does not exist (at once if it does
// not), ctx ends (its deadline is the timeout; ctx's error is returned), or
// the Barrier or its client is closed (zkrecipes.ErrClosed). Every wake-up, whatever
// woke it, checks the node again: only its absence, as the server answers,
// ends the wait. Connection trouble is waited out until ctx ends. A nil
// ctx is an error wrapping zkrecipes.ErrInvalidArgument, and nothing is
// sent.
func (b *Barrier) Wait(ctx context.Context) error {
	wctx, cancel, err := b.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return b.named(ended(ctx, b.closed, b.wait(wctx)))
}

func (b *Barrier) wait(ctx context.Context) error {
	pacer := b.rt.Pacer()
	synced := false
	for {
		lost := b.client.Session().Lost
		wctx, cancel := context.WithCancel(ctx)
		exists, _, changed, err := b.client.ExistsW(wctx, b.path)
		switch {
		case err == nil && !exists && !synced:
			// The server may lag the leader: a barrier set before this
			// Wait began may not have reached it. Absent after a sync, it
			// is gone (a server a reconnect moves us to has seen all we
			// have, so one sync covers the whole Wait).
			cancel()
			if err := b.client.Sync(ctx, b.path); err != nil && !errors.Is(err, zk.ErrNoNode) {
				if ctx.Err() != nil || b.closed() || !retry.Retryable(err) && !errors.Is(err, zk.ErrSessionExpired) {
					return waitErr(ctx, engine.Err(err, b.closed()))
				}
				if err := b.sleep(ctx, pacer.Next()); err != nil {
					return err
				}
				continue
			}
			synced = true
			continue
		case err == nil && !exists:
			cancel()
			return nil
		case err != nil:
			cancel()
			if ctx.Err() != nil || b.closed() || !retry.Retryable(err) && !errors.Is(err, zk.ErrSessionExpired) {
				return waitErr(ctx, engine.Err(err, b.closed()))
			}
			if err := b.sleep(ctx, pacer.Next()); err != nil {
				return err
			}
			continue
		}
		pacer.Reset()
		select {
		case <-changed:
		// A new session has none of the old one's watches: check again.
		case <-lost:
		case <-ctx.Done():
		}
		cancel()
		if err := stopped(ctx, b.closed()); err != nil {
			return err
		}
	}
}

// Close ends this Barrier: a Wait under way and every later call return
// zkrecipes.ErrClosed. It deletes nothing: the barrier node is shared
// state that any process sets and removes, it belongs to no session, and
// it stays as it is. The client is not closed. It is idempotent and
// returns nil (an error only for a nil or zero Barrier).
func (b *Barrier) Close() error {
	if b == nil || b.rt == nil {
		return framework.Invalid(barrierRecipe, "Barrier", "New")
	}
	return b.rt.Close(nil)
}

// closed reports whether the Barrier or its client is closed: then a
// request that failed, or a wait that ended, ended for that.
func (b *Barrier) closed() bool { return b.rt.Closed() || b.client.Closed() }

func (b *Barrier) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return stopped(ctx, b.closed())
	}
}

func closedCh(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// stopped says why ctx, the context of a call under
// framework.Runtime.Within, ended, or nil if it did not: zkrecipes.ErrClosed
// when the recipe or its client is closed (closed), else the error of the
// caller's context it ends with.
func stopped(ctx context.Context, closed bool) error {
	switch {
	case ctx.Err() == nil:
		return nil
	case closed:
		return zkrecipes.ErrClosed
	}
	return ctx.Err()
}

// ended is the error of a call that ran under wctx, Within's context of
// ctx, and failed with err: the caller's ctx ended, its error (see
// waitErr); the recipe or its client closed (closed reports it), an error
// that says zkrecipes.ErrClosed (a request under way fails with wctx's
// end); else err.
func ended(ctx context.Context, closed func() bool, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return waitErr(ctx, err)
	}
	return engine.Err(err, closed())
}

// waitErr prefers ctx's own error when ctx ended: the caller's timeout is
// what stopped the call, whatever the last request said.
func waitErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return errors.Join(ctx.Err(), err)
	}
	return err
}
