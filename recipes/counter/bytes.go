package counter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/retry"
)

// The recipes' names in their errors.
const (
	longRecipe    = "long counter"
	integerRecipe = "integer counter"
	bytesRecipe   = "bytes counter"
)

// Stats is Curator's AtomicStats: how an operation got its result.
type Stats struct {
	// OptimisticTries counts the compare-and-sets tried without the lock.
	OptimisticTries int
	// OptimisticTime is the time spent on them.
	OptimisticTime time.Duration
	// PromotedTries counts the compare-and-sets tried under the promoted
	// lock.
	PromotedTries int
	// PromotedTime is the time spent on the promoted lock, waiting for it
	// included.
	PromotedTime time.Duration
}

// Result is Curator's AtomicValue: the outcome of one operation.
type Result[T any] struct {
	// Succeeded says the operation applied its change (Get always
	// succeeds).
	Succeeded bool
	// PreValue is the value the operation last read: for Swap, the value
	// it replaced.
	PreValue T
	// PostValue is the value it wrote, if it succeeded (Get: the value
	// read); else the zero value, as Curator's. With
	// zkrecipes.ErrOutcomeUnknown, the value it may or may not have
	// written.
	PostValue T
	// Stats counts the tries.
	Stats Stats
}

// Bytes is Curator's DistributedAtomicValue: a byte string in the node at
// its path, changed by compare-and-set. It is safe for concurrent use;
// make one with NewBytes.
type Bytes struct {
	recipe string
	client *framework.Client
	path   string
	retry  retry.Policy
	promo  *promotion
	mutex  *mutex.Mutex // nil unless promoted
	// rt is the counter's lifecycle: its closed state, and the contexts
	// of the calls in progress, which its Close ends.
	rt *framework.Runtime
}

// errConflict: another writer came first; nothing was written.
var errConflict = errors.New("conflict")

// NewBytes returns the byte counter at path. It sends nothing.
func NewBytes(client *framework.Client, path string, opts ...Option) (*Bytes, error) {
	return newBytes(bytesRecipe, client, path, opts)
}

func newBytes(recipe string, client *framework.Client, path string, opts []Option) (*Bytes, error) {
	if client == nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	cfg, err := framework.Configure(recipe, path, config{}, opts, Option.applyCounter)
	if err == nil && cfg.promo != nil && cfg.promo.path == path {
		cfg.Invalidf("the promoted lock path is the counter's own path %q", path)
		err = framework.RecipeErr(recipe, path, cfg.Err())
	}
	if err != nil {
		return nil, err
	}
	v := &Bytes{recipe: recipe, client: client, path: path, retry: retry.Default(), rt: framework.NewRuntime(client, recipe, path)}
	if cfg.retry != nil {
		v.retry = *cfg.retry
	}
	if p := cfg.promo; p != nil {
		// mutex.New checks the participant id's size, as the data of
		// the lock's nodes.
		m, err := mutex.New(client, p.path, mutex.WithParticipantID(cfg.ParticipantID()))
		if err != nil {
			return nil, framework.RecipeErr(recipe, path, fmt.Errorf("promoted lock: %w", err))
		}
		v.promo, v.mutex = p, m
	}
	return v, nil
}

// Path returns the node's path.
func (v *Bytes) Path() string {
	if v == nil {
		return ""
	}
	return v.path
}

// Close ends the calls in progress on v with zkrecipes.ErrClosed (a call
// whose write was on its way says zkrecipes.ErrOutcomeUnknown too), and
// makes every later call fail with it. It closes the promoted mutex, if
// any: a hold of it is released and its node deleted, waiting only for the
// delete to be sent (at most framework.WithReleaseTimeout). The counter's
// node, which belongs to no session, stays as it is. The client is not
// closed. Close is idempotent: later calls return nil.
func (v *Bytes) Close() error {
	if err := v.usable(); err != nil {
		return err
	}
	return v.rt.Close(func(context.Context) error {
		if v.mutex == nil {
			return nil
		}
		return engine.Err(v.mutex.Close(), true)
	})
}

// usable says why v cannot be used: it is nil or a zero Bytes.
func (v *Bytes) usable() error {
	if v == nil || v.rt == nil {
		return framework.Invalid(bytesRecipe, "Bytes", "NewBytes")
	}
	return nil
}

// fail names the recipe and its path in err, and says zkrecipes.ErrClosed
// if the counter was closed meanwhile.
func (v *Bytes) fail(err error) error {
	if err == nil {
		return nil
	}
	return framework.RecipeErr(v.recipe, v.path, engine.Err(err, v.rt.Closed() || v.client.Closed()))
}

// begin refuses a nil ctx, and a closed counter or client, before anything
// is sent, and returns a context that Close ends too (the client's as
// well).
func (v *Bytes) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := v.usable(); err != nil {
		return nil, nil, err
	}
	if ctx == nil {
		return nil, nil, v.fail(zkrecipes.ErrNilContext)
	}
	return v.rt.Within(ctx)
}

// Get returns the current value (nil if the node does not exist).
func (v *Bytes) Get(ctx context.Context) (Result[[]byte], error) {
	ctx, done, err := v.begin(ctx)
	if err != nil {
		return Result[[]byte]{}, err
	}
	defer done()
	data, _, err := v.read(ctx)
	if err != nil {
		return Result[[]byte]{}, v.fail(err)
	}
	return Result[[]byte]{Succeeded: true, PreValue: data, PostValue: data}, nil
}

// CompareAndSet sets the value to newValue if it is expectedValue (byte
// for byte), in one try: Succeeded false if it was not, or if someone else
// wrote between the read and the write.
//
// A missing node and an empty one hold nothing, as Get reads them: an
// empty (or nil) expectedValue matches both. On a missing node a match
// creates the node (its parents as containers) with newValue; if someone
// else creates it first, Succeeded is false. A loop of Get then
// CompareAndSet makes progress from a node that does not exist yet
// (Curator's compareAndSet never creates it). The write is sent at most
// once, the create too: a lost reply is zkrecipes.ErrOutcomeUnknown.
func (v *Bytes) CompareAndSet(ctx context.Context, expectedValue, newValue []byte) (Result[[]byte], error) {
	return v.compareAndSet(ctx, func(cur []byte) bool { return bytes.Equal(cur, expectedValue) }, newValue)
}

// compareAndSet is CompareAndSet with the comparison of the value read
// (nil for a missing node) left to matches.
func (v *Bytes) compareAndSet(ctx context.Context, matches func(cur []byte) bool, newValue []byte) (Result[[]byte], error) {
	ctx, done, err := v.begin(ctx)
	if err != nil {
		return Result[[]byte]{}, err
	}
	defer done()
	var res Result[[]byte]
	// The answer depends on the value read: from a server that lags the
	// leader, it could be older than a write made before this call began
	// (a compare-and-set that fails, reporting an old value). Syncing
	// first makes the read at least as new as the call.
	if err := v.sync(ctx); err != nil {
		return res, v.fail(err)
	}
	data, st, err := v.read(ctx)
	if err != nil {
		return res, v.fail(err)
	}
	res.PreValue = data
	if !matches(data) {
		return res, nil
	}
	if st == nil {
		err = v.create(ctx, nil, newValue) // errConflict: created by someone else first
	} else {
		err = v.setVersioned(ctx, nil, st, newValue)
	}
	switch {
	case err == nil:
		res.Succeeded, res.PostValue = true, clone(newValue)
	case errors.Is(err, errConflict):
	case errors.Is(err, zkrecipes.ErrOutcomeUnknown), errors.Is(err, zkrecipes.ErrRecreated):
		res.PostValue = clone(newValue)
		return res, v.fail(err)
	default:
		return res, v.fail(err)
	}
	return res, nil
}

// Swap sets the value to newValue, as Curator's trySet, and returns the
// value it replaced in PreValue, as sync/atomic's Swap: a compare-and-set
// of newValue over the value read, tried again under the optimistic retry
// policy (WithOptimisticRetry) and then under the promoted lock, if any
// (WithPromotedToLock). Succeeded is false if every try lost to another
// writer: nothing was written. Each write is sent at most once: a lost
// reply is zkrecipes.ErrOutcomeUnknown, with the value read and newValue
// in the Result.
func (v *Bytes) Swap(ctx context.Context, newValue []byte) (Result[[]byte], error) {
	nv := clone(newValue)
	return v.trySet(ctx, func([]byte) ([]byte, error) { return nv, nil })
}

// Set sets the value to newValue whatever it is, creating the node (and
// its parents, as containers) if it does not exist: a blind write, which
// tells nothing of the value it replaced (Swap does). Curator's forceSet.
func (v *Bytes) Set(ctx context.Context, newValue []byte) error {
	ctx, done, err := v.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	set := &zk.SetDataRequest{Path: v.path, Data: newValue, Version: -1}
	err = v.write(ctx, nil, set)
	if errors.Is(err, errConflict) { // no node
		err = v.create(ctx, nil, newValue)
		if errors.Is(err, errConflict) { // created meanwhile
			err = v.write(ctx, nil, set)
		}
	}
	if errors.Is(err, errConflict) {
		// Created and deleted again by others between our writes: as
		// Curator, give up rather than chase them.
		err = fmt.Errorf("the node was created and deleted by others meanwhile: %w", zk.ErrNoNode)
	}
	return v.fail(err)
}

// Initialize creates the node with value if it does not exist, and
// reports whether it did: a node that exists is left as it is.
func (v *Bytes) Initialize(ctx context.Context, value []byte) (bool, error) {
	ctx, done, err := v.begin(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	err = v.create(ctx, nil, value)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errConflict):
		return false, nil
	}
	return false, v.fail(err)
}

// trySet is Curator's trySet(MakeValue): optimistic compare-and-sets, then
// the promoted lock. make computes the new value from the one read (nil if
// the node does not exist).
func (v *Bytes) trySet(ctx context.Context, make func(prev []byte) ([]byte, error)) (Result[[]byte], error) {
	var res Result[[]byte]
	ctx, done, err := v.begin(ctx)
	if err != nil {
		return res, err
	}
	defer done()
	start := time.Now()
	err = v.loop(ctx, v.retry, &res, &res.Stats.OptimisticTries, nil, make)
	res.Stats.OptimisticTime = time.Since(start)
	if err == nil && !res.Succeeded && v.mutex != nil {
		err = v.promoted(ctx, &res, make)
	}
	return res, v.fail(err)
}

// promoted takes the promoted mutex, within its timeout, and tries again
// under it, each write fenced by the hold. A timeout is no error: as
// Curator, Succeeded stays false.
func (v *Bytes) promoted(ctx context.Context, res *Result[[]byte], make func([]byte) ([]byte, error)) error {
	start := time.Now()
	defer func() { res.Stats.PromotedTime = time.Since(start) }()
	lctx, cancel := context.WithTimeout(ctx, v.promo.timeout)
	h, err := v.mutex.Acquire(lctx)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil
		}
		return fmt.Errorf("promoted lock: %w", err)
	}
	// The writes were fenced: a failed release changes nothing they did,
	// and the hold cleans up its node itself.
	defer func() { _ = h.Release() }()
	return v.loop(ctx, v.promo.retry, res, &res.Stats.PromotedTries, h, make)
}

// loop runs tries under policy until one succeeds, the policy stops
// conflicts being tried again (res.Succeeded stays false, no error), or
// one fails otherwise.
func (v *Bytes) loop(ctx context.Context, policy retry.Policy, res *Result[[]byte], tries *int, h *hold.Hold, make func([]byte) ([]byte, error)) error {
	conflicted := false
	err := retry.Do(ctx, policy, func(ctx context.Context) error {
		*tries++
		if conflicted {
			// The value read last was older than the node's: the server
			// may lag the leader. Catch it up before reading again, or
			// every try would read the same old value.
			if err := v.sync(ctx); err != nil {
				return err
			}
		}
		err := v.tryOnce(ctx, res, h, make)
		conflicted = errors.Is(err, errConflict)
		return err
	}, retry.WithRetryable(func(err error) bool { return errors.Is(err, errConflict) }))
	var ex *retry.ExhaustedError
	switch {
	case err == nil:
		res.Succeeded = true
	case errors.As(err, &ex) && errors.Is(err, errConflict):
		return nil
	case errors.Is(err, errConflict):
		// Interrupted between tries: the caller's context ended.
		return ctx.Err()
	}
	return err
}

// tryOnce is one compare-and-set: read, make, write with the version read
// (create if there was no node). errConflict if another writer came first.
func (v *Bytes) tryOnce(ctx context.Context, res *Result[[]byte], h *hold.Hold, make func([]byte) ([]byte, error)) error {
	res.PostValue = nil
	data, st, err := v.read(ctx)
	if err != nil {
		return err
	}
	res.PreValue = data
	nv, err := make(data)
	if err != nil {
		return err
	}
	if st == nil {
		err = v.create(ctx, h, nv)
	} else {
		err = v.setVersioned(ctx, h, st, nv)
	}
	if err == nil || errors.Is(err, zkrecipes.ErrOutcomeUnknown) || errors.Is(err, zkrecipes.ErrRecreated) {
		res.PostValue = clone(nv)
	}
	return err
}

// setVersioned sets the node to data if it is still at the version read
// (st). ZooKeeper compares versions only, and a node deleted and made
// again starts at version 0 once more: a set that lands on such a node
// (its czxid is not the one read) is zkrecipes.ErrRecreated, not a success from the
// value read (Curator reports it as one).
func (v *Bytes) setVersioned(ctx context.Context, h *hold.Hold, st *zk.Stat, data []byte) error {
	got, err := v.writeStat(ctx, h, &zk.SetDataRequest{Path: v.path, Data: data, Version: st.Version})
	if err == nil && got != nil && got.Czxid != st.Czxid {
		return fmt.Errorf("%w: made again (czxid %d, read %d)", zkrecipes.ErrRecreated, got.Czxid, st.Czxid)
	}
	return err
}

// read returns the node's data and stat; no node is a nil stat. Reads are
// safe to resend: the framework retries them.
// sync makes the server this client reads from catch up with the leader
// on the value's path.
func (v *Bytes) sync(ctx context.Context) error {
	err := v.client.Sync(ctx, v.path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

func (v *Bytes) read(ctx context.Context) ([]byte, *zk.Stat, error) {
	data, st, err := v.client.Get(ctx, v.path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return data, st, nil
}

// create makes the node with data, its parents as containers first if
// they are missing. errConflict if the node exists.
func (v *Bytes) create(ctx context.Context, h *hold.Hold, data []byte) error {
	req := &zk.CreateRequest{Path: v.path, Data: data, Flags: zk.FlagPersistent}
	err := v.write(ctx, h, req)
	var me *framework.MultiOpError
	if !errors.As(err, &me) || !errors.Is(me.Err, zk.ErrNoNode) {
		return err
	}
	// No parent: the create was refused, so it may be sent again.
	parent := framework.Parent(v.path)
	_, err = v.client.Create(ctx, parent, nil, framework.WithMode(framework.Container), framework.WithParentContainers())
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return v.write(ctx, h, req)
}

// write sends one write, at most once (under h's fence if h is not nil):
// resending a write that may have been applied, as a retrying client
// does, could apply an increment twice. A create refused for a missing
// parent comes back as is (a *framework.MultiOpError); every other refusal
// the server makes of the op is errConflict.
func (v *Bytes) write(ctx context.Context, h *hold.Hold, op any) error {
	_, err := v.writeStat(ctx, h, op)
	return err
}

// writeStat is write that also returns the reply's stat of the node (for a
// set: the node the write landed on).
func (v *Bytes) writeStat(ctx context.Context, h *hold.Hold, op any) (*zk.Stat, error) {
	var res []zk.MultiResponse
	var err error
	if h != nil {
		res, err = h.Fenced(ctx, op)
	} else {
		res, err = v.client.MultiOnce(ctx, op)
	}
	if err == nil {
		var st *zk.Stat
		if len(res) > 0 {
			st = res[0].Stat
		}
		return st, nil
	}
	return nil, v.refusal(op, err)
}

// refusal classes a failed write's error (see write).
func (v *Bytes) refusal(op any, err error) error {
	var me *framework.MultiOpError
	if !errors.As(err, &me) {
		return err
	}
	_, isCreate := op.(*zk.CreateRequest)
	switch {
	case errors.Is(me.Err, zk.ErrNoNode) && isCreate:
		return err
	case errors.Is(me.Err, zk.ErrNoNode), errors.Is(me.Err, zk.ErrBadVersion), errors.Is(me.Err, zk.ErrNodeExists):
		return fmt.Errorf("%w: %w", errConflict, me.Err)
	}
	return err
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}
