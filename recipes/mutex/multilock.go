package mutex

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// multiRecipe names a MultiLock in its errors.
const multiRecipe = "multilock"

// Lock is what a MultiLock is made of: a *Mutex, a *SemaphoreMutex, a
// write or read lock of package rwlock, or any lock of your own whose
// Acquire returns a hold.
type Lock interface {
	Acquire(ctx context.Context) (*hold.Hold, error)
}

// MultiLock acquires several locks as one, all or nothing, as Curator's
// InterProcessMultiLock. Locks are taken in the order given; always use
// the same order everywhere to avoid deadlock between processes. Give the
// holds back with hold.ReleaseAll (or each its Release).
type MultiLock struct {
	locks []Lock
}

// NewMultiLock returns a MultiLock over locks: one or more, none nil.
func NewMultiLock(locks ...Lock) (*MultiLock, error) {
	if len(locks) == 0 {
		return nil, framework.RecipeErr(multiRecipe, "", fmt.Errorf("%w: no locks", zkrecipes.ErrInvalidArgument))
	}
	for i, l := range locks {
		if l == nil || isNilPointer(l) {
			return nil, framework.RecipeErr(multiRecipe, "", fmt.Errorf("%w: lock %d is nil", zkrecipes.ErrInvalidArgument, i))
		}
	}
	return &MultiLock{locks: append([]Lock(nil), locks...)}, nil
}

// Acquire takes every lock in order under the one ctx and returns their
// holds, in the order of the locks. If any cannot be taken, those already
// taken are released in reverse order and the error is returned; so too
// if a hold taken first was lost while a later lock was waited for (the
// error wraps zkrecipes.ErrHoldLost).
func (ml *MultiLock) Acquire(ctx context.Context) ([]*hold.Hold, error) {
	if ml == nil || len(ml.locks) == 0 {
		return nil, framework.RecipeErr(multiRecipe, "", fmt.Errorf("%w: a nil or zero MultiLock: make one with NewMultiLock", zkrecipes.ErrInvalidArgument))
	}
	if ctx == nil {
		return nil, framework.RecipeErr(multiRecipe, "", zkrecipes.ErrNilContext)
	}
	holds := make([]*hold.Hold, 0, len(ml.locks))
	for i, l := range ml.locks {
		h, err := l.Acquire(ctx)
		if err != nil {
			rollback := hold.ReleaseAll(holds...)
			return nil, errors.Join(fmt.Errorf("multilock: lock %d: %w", i, err), rollback)
		}
		holds = append(holds, h)
	}
	// A hold taken first may have been lost while a later lock was waited
	// for: none is handed out then.
	for i, h := range holds {
		if err := h.Err(); err != nil {
			rollback := hold.ReleaseAll(holds...)
			return nil, errors.Join(fmt.Errorf("multilock: lock %d: %w: %w", i, zkrecipes.ErrHoldLost, err), rollback)
		}
	}
	return holds, nil
}

// isNilPointer catches a nil *Mutex passed as a Lock, which is not == nil.
func isNilPointer(l Lock) bool {
	v := reflect.ValueOf(l)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
