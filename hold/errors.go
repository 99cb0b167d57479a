package hold

import (
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/framework"
)

// The errors of acquiring, holding and releasing, each declared once, for
// every recipe that hands out holds. A recipe returns them wrapped in a
// *framework.RecipeError that names it and its path; errors.Is finds them.
// Why a hold ended is one of these or one of package framework's
// (framework.ErrSuspended, framework.ErrSessionLost,
// framework.ErrNodeDeleted, framework.ErrClosed).
var (
	// ErrWouldBlock: a TryAcquire found the lock held (or the leases
	// taken).
	ErrWouldBlock = errors.New("would block")
	// ErrReleased: the hold was released; a second Release returns it.
	ErrReleased = errors.New("released")
	// ErrHoldLost: the hold stopped being trusted before Release; the error
	// says why too. Anything done after that moment was unprotected.
	ErrHoldLost = errors.New("hold lost before release")
	// ErrLeaseExpired: the hold's lease time (a recipe's WithLeaseTime)
	// ran out before Release: its node is being deleted (at once, or once
	// the link is back if it is down), and others may hold the lock
	// already.
	ErrLeaseExpired = errors.New("lease time ran out")
	// ErrNoLeaseTime: Extend of a hold acquired without a lease time.
	ErrNoLeaseTime = errors.New("hold has no lease time")
	// ErrNotOwner: a goroutine released a reentrant lock that another
	// goroutine holds.
	ErrNotOwner = errors.New("held by another goroutine")
	// ErrNotHeld: a reentrant lock was released more times than acquired.
	ErrNotHeld = errors.New("not held")
	// ErrFenceCheckFailed: the server refused a fenced write's check of the
	// hold's own node for a reason other than its absence (no READ
	// permission on it, say): nothing was applied, and the hold stands.
	ErrFenceCheckFailed = errors.New("fenced write: the check of the hold's node failed")
)

// ErrReleasedByClose is what Release says of a hold its recipe's Close
// gave back already: it matches ErrReleased (released, once) and
// framework.ErrClosed (by whom), in every recipe.
var ErrReleasedByClose = fmt.Errorf("%w by its recipe's Close: %w", ErrReleased, framework.ErrClosed)
