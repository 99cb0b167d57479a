package counter

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Number is an atomic counter in one node: Long (Curator's
// DistributedAtomicLong, 8 bytes big-endian) or Integer (Curator's
// DistributedAtomicInteger, 4 bytes big-endian). A missing or empty node
// reads as 0; data of another length is zkrecipes.ErrBadData (Curator reads the
// first bytes of a longer node; this refuses it). Arithmetic wraps around,
// as Java's. It is safe for concurrent use.
type Number[T int32 | int64] struct {
	v *Value
}

// Long is Curator's DistributedAtomicLong.
type Long = Number[int64]

// Integer is Curator's DistributedAtomicInteger.
type Integer = Number[int32]

// NewLong returns the atomic long at path. Nothing is sent.
func NewLong(client *framework.Client, path string, opts ...Option) (*Long, error) {
	v, err := newValue("atomic long", client, path, opts)
	if err != nil {
		return nil, err
	}
	return &Long{v: v}, nil
}

// NewInteger returns the atomic integer at path. Nothing is sent.
func NewInteger(client *framework.Client, path string, opts ...Option) (*Integer, error) {
	v, err := newValue("atomic integer", client, path, opts)
	if err != nil {
		return nil, err
	}
	return &Integer{v: v}, nil
}

// Path returns the node's path.
func (n *Number[T]) Path() string { return n.v.path }

// Close ends the use of n, as Value.Close.
func (n *Number[T]) Close() error { return n.v.Close() }

// Get returns the current value (0 if the node does not exist).
func (n *Number[T]) Get(ctx context.Context) (Result[T], error) {
	r, err := n.v.Get(ctx)
	return n.result(r, err)
}

// Increment adds 1, as Add.
func (n *Number[T]) Increment(ctx context.Context) (Result[T], error) { return n.Add(ctx, 1) }

// Decrement subtracts 1, as Add.
func (n *Number[T]) Decrement(ctx context.Context) (Result[T], error) { return n.Add(ctx, -1) }

// Subtract subtracts delta, as Add.
func (n *Number[T]) Subtract(ctx context.Context, delta T) (Result[T], error) {
	return n.Add(ctx, -delta)
}

// Add adds delta by compare-and-set, creating the node if it does not
// exist, tried again under the retry policy and then under the promoted
// lock, if any: Succeeded false if every try lost to another writer. With
// zkrecipes.ErrOutcomeUnknown the addition may or may not have been applied, once:
// PreValue and PostValue are the value read and the value written.
func (n *Number[T]) Add(ctx context.Context, delta T) (Result[T], error) {
	r, err := n.v.trySet(ctx, "add", func(prev []byte) ([]byte, error) {
		x, err := n.decode(prev)
		if err != nil {
			return nil, err
		}
		return n.encode(x + delta), nil
	})
	return n.result(r, err)
}

// CompareAndSet sets the value to newValue if it is expectedValue, in one
// try, as Value.CompareAndSet. A missing or empty node holds 0, as Get
// reads it: CompareAndSet(0, n) creates a missing node with n (Succeeded
// false if someone else creates it first) and sets an empty one at the
// version read, so a loop of Get then CompareAndSet makes progress from
// either. Data of another length matches nothing (ErrCorrupt).
func (n *Number[T]) CompareAndSet(ctx context.Context, expectedValue, newValue T) (Result[T], error) {
	r, err := n.v.compareAndSet(ctx, func(cur []byte) bool {
		x, err := n.decode(cur)
		return err == nil && x == expectedValue
	}, n.encode(newValue))
	return n.result(r, err)
}

// TrySet sets the value to newValue, as Value.TrySet.
func (n *Number[T]) TrySet(ctx context.Context, newValue T) (Result[T], error) {
	nv := n.encode(newValue)
	r, err := n.v.trySet(ctx, "try-set", func(prev []byte) ([]byte, error) {
		if _, err := n.decode(prev); err != nil {
			return nil, err // corrupt: nothing is written over it
		}
		return nv, nil
	})
	return n.result(r, err)
}

// ForceSet sets the value to newValue whatever it is, as Value.ForceSet.
func (n *Number[T]) ForceSet(ctx context.Context, newValue T) error {
	return n.v.ForceSet(ctx, n.encode(newValue))
}

// Initialize creates the node with value if it does not exist, and
// reports whether it did.
func (n *Number[T]) Initialize(ctx context.Context, value T) (bool, error) {
	return n.v.Initialize(ctx, n.encode(value))
}

func (n *Number[T]) size() int {
	var zero T
	if _, ok := any(zero).(int32); ok {
		return 4
	}
	return 8
}

func (n *Number[T]) encode(x T) []byte {
	if n.size() == 4 {
		return binary.BigEndian.AppendUint32(nil, uint32(x))
	}
	return binary.BigEndian.AppendUint64(nil, uint64(x))
}

func (n *Number[T]) decode(b []byte) (T, error) {
	switch len(b) {
	case 0:
		return 0, nil
	case n.size():
		if n.size() == 4 {
			return T(int32(binary.BigEndian.Uint32(b))), nil
		}
		return T(int64(binary.BigEndian.Uint64(b))), nil
	}
	return 0, fmt.Errorf("%w: node %s holds %d bytes (% x), a %d-byte number expected", zkrecipes.ErrBadData, n.v.path, len(b), b, n.size())
}

// result decodes r; a value that does not decode is reported with the
// error (and the zero value) rather than hidden.
func (n *Number[T]) result(r Result[[]byte], err error) (Result[T], error) {
	out := Result[T]{Succeeded: r.Succeeded, Stats: r.Stats}
	pre, perr := n.decode(r.PreValue)
	post, qerr := n.decode(r.PostValue)
	out.PreValue, out.PostValue = pre, post
	if err == nil && (perr != nil || qerr != nil) {
		if perr == nil {
			perr = qerr
		}
		return out, perr
	}
	return out, err
}
