package hold

import (
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// Extend moves the end of the hold's lease (a recipe's WithLeaseTime) to d
// from now, if that is later than it is: it never shortens a lease. A
// reentrant hold shares one lease with the other acquisitions of its
// node. Extend fails with zkrecipes.ErrNoLeaseTime for a hold without a lease, with
// zkrecipes.ErrReleased after Release, and with an error wrapping zkrecipes.ErrHoldLost and
// the reason once the hold has ended otherwise (zkrecipes.ErrLeaseExpired if its
// lease ran out first): a lease that ended is not brought back.
func (h *Hold) Extend(d time.Duration) error {
	if h == nil {
		return errNilHold
	}
	return h.named(h.extend(d))
}

func (h *Hold) extend(d time.Duration) error {
	path := h.src.Path()
	if d <= 0 {
		return fmt.Errorf("extend %s: %w: %v is not positive", path, zkrecipes.ErrInvalidArgument, d)
	}
	if h.released.Load() {
		return fmt.Errorf("extend %s: %w", path, zkrecipes.ErrReleased)
	}
	h.src.Check() // a lease is not extended on a link past its bound
	switch e := h.state(); {
	case e != nil && errors.Is(e, zkrecipes.ErrReleased):
		return fmt.Errorf("extend %s: %w", path, e)
	case e != nil:
		return fmt.Errorf("extend %s: %w: %w", path, zkrecipes.ErrHoldLost, h.told(e))
	}
	// Open a moment ago: the source says whether it still is, and pushes
	// its lease in the same step.
	if err := h.src.Extend(d); err != nil {
		return fmt.Errorf("extend %s: %w", path, err)
	}
	return nil
}

// Expiry is when the hold's lease ends, and false for a hold without a
// lease time (or a nil Hold).
func (h *Hold) Expiry() (time.Time, bool) {
	if h == nil {
		return time.Time{}, false
	}
	return h.src.Expiry()
}
