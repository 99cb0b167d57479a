package atomic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/errs"
	"github.com/zkrecipes/zkrecipes/internal/fwlink"
	"github.com/zkrecipes/zkrecipes/internal/option"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/retry"
)

// The errors of the package; errors.Is matches them.
var (
	// ErrOutcomeUnknown: a write's reply was lost (the link dropped, the
	// client closed or the context ended while it was on its way). It may
	// or may not have been applied; the Result's PreValue and PostValue are
	// the value read and the value written.
	ErrOutcomeUnknown = hold.ErrOutcomeUnknown
	// ErrCorrupt: the node holds data of the wrong length for a Long (8
	// bytes) or an Integer (4 bytes). Nothing was written.
	ErrCorrupt = errors.New("atomic: corrupt data")
	// ErrRecreated: the write was applied, but to a node deleted and made
	// again by someone else since it was read (ZooKeeper compares
	// versions only, and the new node's version matched): the value it
	// replaced was not PreValue. The Result's PostValue is what the node
	// holds now.
	ErrRecreated = errors.New("atomic: the node was deleted and made again between the read and the write")
	// ErrClosed: the counter was closed.
	ErrClosed = hold.ErrClosed
	// ErrNilClient: a constructor was given a nil client.
	ErrNilClient = hold.ErrNilClient
	// ErrInvalidOption: an option's value is invalid or does not apply.
	ErrInvalidOption = hold.ErrInvalidOption
	// ErrHoldLost: the promoted mutex was lost before its write was sent;
	// nothing was written under it.
	ErrHoldLost = hold.ErrHoldLost
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
	// PreValue is the value the operation last read.
	PreValue T
	// PostValue is the value it wrote, if it succeeded (Get: the value
	// read); else the zero value, as Curator's. With ErrOutcomeUnknown,
	// the value it may or may not have written.
	PostValue T
	// Stats counts the tries.
	Stats Stats
}

// Value is Curator's DistributedAtomicValue: a byte string in the node at
// its path, changed by compare-and-set. It is safe for concurrent use.
type Value struct {
	client *framework.Client
	path   string
	retry  retry.Policy
	promo  *option.Promotion
	mutex  *mutex.Mutex // nil unless promoted
	closed atomic.Bool

	// beforeWrite, if set (by tests), runs between a try's read and its
	// write, with the promoted hold if there is one.
	beforeWrite func(h *hold.Hold)
}

// errConflict: another writer came first; nothing was written.
var errConflict = errors.New("atomic: conflict")

// NewValue returns the atomic value at path. Nothing is sent.
func NewValue(client *framework.Client, path string, opts ...Option) (*Value, error) {
	return newValue("atomic value", client, path, opts)
}

func newValue(recipe string, client *framework.Client, path string, opts []Option) (*Value, error) {
	if client == nil {
		return nil, fmt.Errorf("%s: %w", recipe, ErrNilClient)
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, fmt.Errorf("%s: %w", recipe, err)
	}
	cfg, err := option.Build(recipe, []option.Name{option.RetryPolicy, option.PromotedToLock, option.ParticipantID}, opts)
	if err != nil {
		return nil, err
	}
	v := &Value{client: client, path: path, retry: retry.Default()}
	if cfg.Retry != nil {
		v.retry = *cfg.Retry
	}
	if p := cfg.Promotion; p != nil {
		if p.Path == path {
			return nil, fmt.Errorf("%s: %w: the promoted lock path is the value's own path %q", recipe, ErrInvalidOption, path)
		}
		m, err := mutex.New(client, p.Path, mutex.WithParticipantID(string(cfg.ID)))
		if err != nil {
			return nil, fmt.Errorf("%s: promoted lock: %w", recipe, err)
		}
		v.promo, v.mutex = p, m
	}
	return v, nil
}

// Path returns the node's path.
func (v *Value) Path() string { return v.path }

// Close ends the use of v: the promoted mutex, if any, is closed (a hold
// of it is released), and every later operation returns ErrClosed. The
// node stays. Close is idempotent.
func (v *Value) Close() error {
	if v.closed.Swap(true) {
		return nil
	}
	if v.mutex != nil {
		return v.mutex.Close()
	}
	return nil
}

func (v *Value) fail(op string, err error) error {
	return fmt.Errorf("atomic %s %s: %w", op, v.path, err)
}

// check refuses a nil ctx, and a closed counter or client, before
// anything is sent.
func (v *Value) check(ctx context.Context, op string) error {
	if ctx == nil {
		return v.fail(op, errs.ErrNilContext)
	}
	if v.closed.Load() || v.client.Closed() {
		return v.fail(op, ErrClosed)
	}
	return nil
}

// Get returns the current value (nil if the node does not exist).
func (v *Value) Get(ctx context.Context) (Result[[]byte], error) {
	if err := v.check(ctx, "get"); err != nil {
		return Result[[]byte]{}, err
	}
	data, _, err := v.read(ctx)
	if err != nil {
		return Result[[]byte]{}, v.fail("get", err)
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
// once, the create too: a lost reply is ErrOutcomeUnknown.
func (v *Value) CompareAndSet(ctx context.Context, expectedValue, newValue []byte) (Result[[]byte], error) {
	return v.compareAndSet(ctx, func(cur []byte) bool { return bytes.Equal(cur, expectedValue) }, newValue)
}

// compareAndSet is CompareAndSet with the comparison of the value read
// (nil for a missing node) left to matches.
func (v *Value) compareAndSet(ctx context.Context, matches func(cur []byte) bool, newValue []byte) (Result[[]byte], error) {
	if err := v.check(ctx, "compare-and-set"); err != nil {
		return Result[[]byte]{}, err
	}
	var res Result[[]byte]
	// The answer depends on the value read: from a server that lags the
	// leader, it could be older than a write made before this call began
	// (a compare-and-set that fails, reporting an old value). Syncing
	// first makes the read at least as new as the call.
	if err := v.sync(ctx); err != nil {
		return res, v.fail("compare-and-set", err)
	}
	data, st, err := v.read(ctx)
	if err != nil {
		return res, v.fail("compare-and-set", err)
	}
	res.PreValue = data
	if !matches(data) {
		return res, nil
	}
	if v.beforeWrite != nil {
		v.beforeWrite(nil)
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
	case errors.Is(err, ErrOutcomeUnknown), errors.Is(err, ErrRecreated):
		res.PostValue = clone(newValue)
		return res, v.fail("compare-and-set", err)
	default:
		return res, v.fail("compare-and-set", err)
	}
	return res, nil
}

// TrySet sets the value to newValue by compare-and-set, tried again under
// the retry policy and then under the promoted lock, if any: Succeeded
// false if every try lost to another writer.
func (v *Value) TrySet(ctx context.Context, newValue []byte) (Result[[]byte], error) {
	nv := clone(newValue)
	return v.trySet(ctx, "try-set", func([]byte) ([]byte, error) { return nv, nil })
}

// ForceSet sets the value to newValue whatever it is, creating the node
// (and its parents, as containers) if it does not exist.
func (v *Value) ForceSet(ctx context.Context, newValue []byte) error {
	if err := v.check(ctx, "force-set"); err != nil {
		return err
	}
	set := &zk.SetDataRequest{Path: v.path, Data: newValue, Version: -1}
	err := v.write(ctx, nil, set)
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
	if err != nil {
		return v.fail("force-set", err)
	}
	return nil
}

// Initialize creates the node with value if it does not exist, and
// reports whether it did.
func (v *Value) Initialize(ctx context.Context, value []byte) (bool, error) {
	if err := v.check(ctx, "initialize"); err != nil {
		return false, err
	}
	err := v.create(ctx, nil, value)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errConflict):
		return false, nil
	}
	return false, v.fail("initialize", err)
}

// trySet is Curator's trySet(MakeValue): optimistic compare-and-sets, then
// the promoted lock. make computes the new value from the one read (nil if
// the node does not exist).
func (v *Value) trySet(ctx context.Context, op string, make func(prev []byte) ([]byte, error)) (Result[[]byte], error) {
	var res Result[[]byte]
	if err := v.check(ctx, op); err != nil {
		return res, err
	}
	start := time.Now()
	err := v.loop(ctx, v.retry, &res, &res.Stats.OptimisticTries, nil, make)
	res.Stats.OptimisticTime = time.Since(start)
	if err == nil && !res.Succeeded && v.mutex != nil {
		err = v.promoted(ctx, &res, make)
	}
	if err != nil {
		return res, v.fail(op, err)
	}
	return res, nil
}

// promoted takes the promoted mutex, within its timeout, and tries again
// under it, each write fenced by the hold. A timeout is no error: as
// Curator, Succeeded stays false.
func (v *Value) promoted(ctx context.Context, res *Result[[]byte], make func([]byte) ([]byte, error)) error {
	start := time.Now()
	defer func() { res.Stats.PromotedTime = time.Since(start) }()
	lctx, cancel := context.WithTimeout(ctx, v.promo.Timeout)
	h, err := v.mutex.Acquire(lctx)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil
		}
		return fmt.Errorf("promoted lock %s: %w", v.promo.Path, err)
	}
	// The writes were fenced: a failed release changes nothing they did,
	// and the hold cleans up its node itself.
	defer func() { _ = h.Release() }()
	return v.loop(ctx, v.promo.Retry, res, &res.Stats.PromotedTries, h, make)
}

// loop runs tries under policy until one succeeds, the policy stops
// conflicts being tried again (res.Succeeded stays false, no error), or
// one fails otherwise.
func (v *Value) loop(ctx context.Context, policy retry.Policy, res *Result[[]byte], tries *int, h *hold.Hold, make func([]byte) ([]byte, error)) error {
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
func (v *Value) tryOnce(ctx context.Context, res *Result[[]byte], h *hold.Hold, make func([]byte) ([]byte, error)) error {
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
	if v.beforeWrite != nil {
		v.beforeWrite(h)
	}
	if st == nil {
		err = v.create(ctx, h, nv)
	} else {
		err = v.setVersioned(ctx, h, st, nv)
	}
	if err == nil || errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrRecreated) {
		res.PostValue = clone(nv)
	}
	return err
}

// setVersioned sets the node to data if it is still at the version read
// (st). ZooKeeper compares versions only, and a node deleted and made
// again starts at version 0 once more: a set that lands on such a node
// (its czxid is not the one read) is ErrRecreated, not a success from the
// value read (Curator reports it as one).
func (v *Value) setVersioned(ctx context.Context, h *hold.Hold, st *zk.Stat, data []byte) error {
	got, err := v.writeStat(ctx, h, &zk.SetDataRequest{Path: v.path, Data: data, Version: st.Version})
	if err == nil && got != nil && got.Czxid != st.Czxid {
		return fmt.Errorf("%w: made again (czxid %d, read %d)", ErrRecreated, got.Czxid, st.Czxid)
	}
	return err
}

// read returns the node's data and stat; no node is a nil stat. Reads are
// safe to resend: the framework retries them.
// sync makes the server this client reads from catch up with the leader
// on the value's path.
func (v *Value) sync(ctx context.Context) error {
	err := v.client.Sync(ctx, v.path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

func (v *Value) read(ctx context.Context) ([]byte, *zk.Stat, error) {
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
func (v *Value) create(ctx context.Context, h *hold.Hold, data []byte) error {
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
func (v *Value) write(ctx context.Context, h *hold.Hold, op any) error {
	_, err := v.writeStat(ctx, h, op)
	return err
}

// writeStat is write that also returns the reply's stat of the node (for a
// set: the node the write landed on).
func (v *Value) writeStat(ctx context.Context, h *hold.Hold, op any) (*zk.Stat, error) {
	var res []zk.MultiResponse
	var err error
	if h != nil {
		res, err = h.Fenced(ctx, op)
	} else {
		res, err = fwlink.Of(v.client).MultiOnce(ctx, op)
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
func (v *Value) refusal(op any, err error) error {
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
