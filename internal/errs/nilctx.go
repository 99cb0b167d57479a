package errs

import (
	"context"
	"errors"
	"fmt"
)

// ErrInvalidArgument is framework.ErrInvalidArgument, documented there. It
// is made here, below conn and retry, so that they refuse bad input with
// the same sentinel as everything above them.
var ErrInvalidArgument = errors.New("framework: invalid argument")

// ErrNilContext is the reason of every refusal of a nil context.
var ErrNilContext = fmt.Errorf("%w: nil context", ErrInvalidArgument)

// NilContext returns nil for a context, and for a nil one the error that
// refuses it, before anything is sent: it wraps ErrInvalidArgument, and
// what names the recipe or the call and its path ("mutex /locks/a").
// Every exported call that takes a context checks it here or in
// framework's own check, which uses ErrNilContext.
func NilContext(ctx context.Context, what string) error {
	if ctx != nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, ErrNilContext)
}
