package counter

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Long is Curator's DistributedAtomicLong: an int64 in the node at its
// path, 8 bytes big-endian. A missing or empty node reads as 0; data of
// another length is zkrecipes.ErrBadData (Curator reads the first bytes of
// a longer node; this refuses it). Arithmetic wraps around, as Java's. It
// is safe for concurrent use; make one with NewLong.
type Long struct{ n number[int64] }

// Integer is Curator's DistributedAtomicInteger: an int32 in the node at
// its path, 4 bytes big-endian, read and written as a Long is. It is safe
// for concurrent use; make one with NewInteger.
type Integer struct{ n number[int32] }

// NewLong returns the long counter at path. It sends nothing.
func NewLong(client *framework.Client, path string, opts ...Option) (*Long, error) {
	v, err := newBytes(longRecipe, client, path, opts)
	if err != nil {
		return nil, err
	}
	return &Long{number[int64]{v}}, nil
}

// NewInteger returns the integer counter at path. It sends nothing.
func NewInteger(client *framework.Client, path string, opts ...Option) (*Integer, error) {
	v, err := newBytes(integerRecipe, client, path, opts)
	if err != nil {
		return nil, err
	}
	return &Integer{number[int32]{v}}, nil
}

func (l *Long) num() *number[int64] {
	if l == nil {
		return nil
	}
	return &l.n
}

func (i *Integer) num() *number[int32] {
	if i == nil {
		return nil
	}
	return &i.n
}

// Path returns the node's path.
func (l *Long) Path() string { return l.num().path() }

// Get returns the current value (0 if the node does not exist).
func (l *Long) Get(ctx context.Context) (Result[int64], error) { return l.num().get(ctx) }

// Increment adds 1, as Add.
func (l *Long) Increment(ctx context.Context) (Result[int64], error) { return l.num().add(ctx, 1) }

// Decrement subtracts 1, as Add.
func (l *Long) Decrement(ctx context.Context) (Result[int64], error) { return l.num().add(ctx, -1) }

// Add adds delta by compare-and-set, creating the node (and its parents,
// as containers) if it does not exist, tried again under the optimistic
// retry policy (WithOptimisticRetry) and then under the promoted lock, if
// any (WithPromotedToLock): Succeeded is false if every try lost to
// another writer. Each write is sent at most once: with
// zkrecipes.ErrOutcomeUnknown the addition may or may not have been
// applied, once, and PreValue and PostValue are the value read and the
// value written.
func (l *Long) Add(ctx context.Context, delta int64) (Result[int64], error) {
	return l.num().add(ctx, delta)
}

// Subtract subtracts delta, as Add.
func (l *Long) Subtract(ctx context.Context, delta int64) (Result[int64], error) {
	return l.num().add(ctx, -delta)
}

// CompareAndSet sets the value to newValue if it is expectedValue, in one
// try, as Bytes.CompareAndSet: Succeeded is false if it was not, or if
// someone else wrote between the read and the write. A missing or empty
// node holds 0, as Get reads it: CompareAndSet(0, n) creates a missing
// node with n (Succeeded false if someone else creates it first) and sets
// an empty one at the version read, so a loop of Get then CompareAndSet
// makes progress from either (Curator's compareAndSet never succeeds
// there). Data of another length matches nothing (zkrecipes.ErrBadData).
func (l *Long) CompareAndSet(ctx context.Context, expectedValue, newValue int64) (Result[int64], error) {
	return l.num().compareAndSet(ctx, expectedValue, newValue)
}

// Swap sets the value to newValue and returns the value it replaced in
// PreValue, as Bytes.Swap. Over data that is not a long it writes nothing
// (zkrecipes.ErrBadData).
func (l *Long) Swap(ctx context.Context, newValue int64) (Result[int64], error) {
	return l.num().swap(ctx, newValue)
}

// Set sets the value to newValue whatever it is, as Bytes.Set.
func (l *Long) Set(ctx context.Context, newValue int64) error { return l.num().set(ctx, newValue) }

// Initialize creates the node with value if it does not exist, and
// reports whether it did.
func (l *Long) Initialize(ctx context.Context, value int64) (bool, error) {
	return l.num().initialize(ctx, value)
}

// Close ends the use of l, as Bytes.Close: calls in progress and later
// ones fail with zkrecipes.ErrClosed, the promoted mutex is closed, the
// node stays, and the client is not closed. It is idempotent.
func (l *Long) Close() error { return l.num().close() }

// Path returns the node's path.
func (i *Integer) Path() string { return i.num().path() }

// Get returns the current value (0 if the node does not exist).
func (i *Integer) Get(ctx context.Context) (Result[int32], error) { return i.num().get(ctx) }

// Increment adds 1, as Add.
func (i *Integer) Increment(ctx context.Context) (Result[int32], error) { return i.num().add(ctx, 1) }

// Decrement subtracts 1, as Add.
func (i *Integer) Decrement(ctx context.Context) (Result[int32], error) {
	return i.num().add(ctx, -1)
}

// Add adds delta, as Long.Add.
func (i *Integer) Add(ctx context.Context, delta int32) (Result[int32], error) {
	return i.num().add(ctx, delta)
}

// Subtract subtracts delta, as Add.
func (i *Integer) Subtract(ctx context.Context, delta int32) (Result[int32], error) {
	return i.num().add(ctx, -delta)
}

// CompareAndSet sets the value to newValue if it is expectedValue, in one
// try, as Long.CompareAndSet.
func (i *Integer) CompareAndSet(ctx context.Context, expectedValue, newValue int32) (Result[int32], error) {
	return i.num().compareAndSet(ctx, expectedValue, newValue)
}

// Swap sets the value to newValue and returns the value it replaced in
// PreValue, as Long.Swap.
func (i *Integer) Swap(ctx context.Context, newValue int32) (Result[int32], error) {
	return i.num().swap(ctx, newValue)
}

// Set sets the value to newValue whatever it is, as Bytes.Set.
func (i *Integer) Set(ctx context.Context, newValue int32) error { return i.num().set(ctx, newValue) }

// Initialize creates the node with value if it does not exist, and
// reports whether it did.
func (i *Integer) Initialize(ctx context.Context, value int32) (bool, error) {
	return i.num().initialize(ctx, value)
}

// Close ends the use of i, as Long.Close.
func (i *Integer) Close() error { return i.num().close() }

// number is a Long or an Integer: a Bytes whose data is a big-endian
// number of T's size.
type number[T int32 | int64] struct {
	v *Bytes
}

// usable says why n cannot be used: it is nil or zero.
func (n *number[T]) usable() error {
	if n == nil || n.v == nil {
		recipe, typ, ctor := longRecipe, "Long", "NewLong"
		if n.size() == 4 {
			recipe, typ, ctor = integerRecipe, "Integer", "NewInteger"
		}
		return framework.Invalid(recipe, typ, ctor)
	}
	return nil
}

func (n *number[T]) path() string {
	if n.usable() != nil {
		return ""
	}
	return n.v.path
}

func (n *number[T]) close() error {
	if err := n.usable(); err != nil {
		return err
	}
	return n.v.Close()
}

func (n *number[T]) get(ctx context.Context) (Result[T], error) {
	if err := n.usable(); err != nil {
		return Result[T]{}, err
	}
	r, err := n.v.Get(ctx)
	return n.result(r, err)
}

func (n *number[T]) add(ctx context.Context, delta T) (Result[T], error) {
	if err := n.usable(); err != nil {
		return Result[T]{}, err
	}
	r, err := n.v.trySet(ctx, func(prev []byte) ([]byte, error) {
		x, err := n.decode(prev)
		if err != nil {
			return nil, err
		}
		return n.encode(x + delta), nil
	})
	return n.result(r, err)
}

func (n *number[T]) compareAndSet(ctx context.Context, expectedValue, newValue T) (Result[T], error) {
	if err := n.usable(); err != nil {
		return Result[T]{}, err
	}
	r, err := n.v.compareAndSet(ctx, func(cur []byte) bool {
		x, err := n.decode(cur)
		return err == nil && x == expectedValue
	}, n.encode(newValue))
	return n.result(r, err)
}

func (n *number[T]) swap(ctx context.Context, newValue T) (Result[T], error) {
	if err := n.usable(); err != nil {
		return Result[T]{}, err
	}
	nv := n.encode(newValue)
	r, err := n.v.trySet(ctx, func(prev []byte) ([]byte, error) {
		if _, err := n.decode(prev); err != nil {
			return nil, err // not a number: nothing is written over it
		}
		return nv, nil
	})
	return n.result(r, err)
}

func (n *number[T]) set(ctx context.Context, newValue T) error {
	if err := n.usable(); err != nil {
		return err
	}
	return n.v.Set(ctx, n.encode(newValue))
}

func (n *number[T]) initialize(ctx context.Context, value T) (bool, error) {
	if err := n.usable(); err != nil {
		return false, err
	}
	return n.v.Initialize(ctx, n.encode(value))
}

func (n *number[T]) size() int {
	var zero T
	if _, ok := any(zero).(int32); ok {
		return 4
	}
	return 8
}

func (n *number[T]) encode(x T) []byte {
	if n.size() == 4 {
		return binary.BigEndian.AppendUint32(nil, uint32(x))
	}
	return binary.BigEndian.AppendUint64(nil, uint64(x))
}

func (n *number[T]) decode(b []byte) (T, error) {
	switch len(b) {
	case 0:
		return 0, nil
	case n.size():
		if n.size() == 4 {
			return T(int32(binary.BigEndian.Uint32(b))), nil
		}
		return T(int64(binary.BigEndian.Uint64(b))), nil
	}
	return 0, fmt.Errorf("%w: the node holds %d bytes (% x), a %d-byte number expected", zkrecipes.ErrBadData, len(b), b, n.size())
}

// result decodes r; a value that does not decode is reported with the
// error (and the zero value) rather than hidden.
func (n *number[T]) result(r Result[[]byte], err error) (Result[T], error) {
	out := Result[T]{Succeeded: r.Succeeded, Stats: r.Stats}
	pre, perr := n.decode(r.PreValue)
	post, qerr := n.decode(r.PostValue)
	out.PreValue, out.PostValue = pre, post
	if err == nil && (perr != nil || qerr != nil) {
		if perr == nil {
			perr = qerr
		}
		return out, n.v.fail(perr)
	}
	return out, err
}
