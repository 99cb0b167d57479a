package mutex

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/errs"
)

// Lock is what a MultiLock is made of: a reentrant lock whose holds belong to
// the goroutine that acquired them. *Mutex is one.
type Lock interface {
	Acquire(ctx context.Context) (*hold.Hold, error)
	Release() error
}

// ErrNoLocks: NewMultiLock without locks, or with a nil one.
var ErrNoLocks = errors.New("mutex: multilock needs one or more non-nil locks")

// MultiLock acquires several locks as one, all or nothing, as Curator's
// InterProcessMultiLock. Locks are taken in the order given; always use the
// same order everywhere to avoid deadlock between processes.
type MultiLock struct {
	locks []Lock
}

// NewMultiLock returns a MultiLock over locks.
func NewMultiLock(locks ...Lock) (*MultiLock, error) {
	if len(locks) == 0 {
		return nil, ErrNoLocks
	}
	for i, l := range locks {
		if l == nil || isNilPointer(l) {
			return nil, fmt.Errorf("%w: lock %d is nil", ErrNoLocks, i)
		}
	}
	return &MultiLock{locks: append([]Lock(nil), locks...)}, nil
}

// Acquire takes every lock in order under the one ctx. If any cannot be
// taken, those already taken are released in reverse order and the error is
// returned. The holds come back in the order of the locks.
func (ml *MultiLock) Acquire(ctx context.Context) ([]*hold.Hold, error) {
	if err := errs.NilContext(ctx, "mutex: multilock"); err != nil {
		return nil, err // before any lock, whatever its Acquire makes of it
	}
	holds := make([]*hold.Hold, 0, len(ml.locks))
	for i, l := range ml.locks {
		h, err := l.Acquire(ctx)
		if err != nil {
			rollback := ml.releaseFirst(i)
			return nil, errors.Join(fmt.Errorf("mutex: multilock: lock %d: %w", i, err), rollback)
		}
		holds = append(holds, h)
	}
	return holds, nil
}

// Release releases every lock, in reverse order, and reports every failure.
func (ml *MultiLock) Release() error { return ml.releaseFirst(len(ml.locks)) }

func (ml *MultiLock) releaseFirst(n int) error {
	var errs []error
	for i := n - 1; i >= 0; i-- {
		if err := ml.locks[i].Release(); err != nil {
			errs = append(errs, fmt.Errorf("mutex: multilock: release lock %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// isNilPointer catches a nil *Mutex passed as a Lock, which is not == nil.
func isNilPointer(l Lock) bool {
	v := reflect.ValueOf(l)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
