// Package errs holds the sentinel errors every recipe shares, in one place
// below the engine, so that the engine returns them directly and every
// public package re-exports the same values (errors.Is matches across
// packages). Their documentation is in the public package hold.
package errs

import "errors"

var (
	ErrSuspended     = errors.New("connection suspended while held")
	ErrSessionLost   = errors.New("session lost while held")
	ErrNodeDeleted   = errors.New("lock node deleted by someone else while held")
	ErrReleased      = errors.New("released")
	ErrLeaseExpired  = errors.New("lease time ran out while held")
	ErrNoLeaseTime   = errors.New("hold has no lease time")
	ErrHoldLost      = errors.New("hold was lost before release")
	ErrInvalidOption = errors.New("invalid option")
	ErrNilClient     = errors.New("nil client")
	ErrNotOwner      = errors.New("released by a goroutine that does not hold it")
	ErrNotHeld       = errors.New("not held")
	ErrWouldBlock    = errors.New("would block")
	ErrClosed        = errors.New("closed")
)
