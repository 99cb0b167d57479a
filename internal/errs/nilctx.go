// Package errs is how every call of the module refuses a nil context:
// one error, wrapping zkrecipes.ErrInvalidArgument.
package errs

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes"
)

// ErrNilContext is the reason of every refusal of a nil context.
var ErrNilContext = fmt.Errorf("%w: nil context", zkrecipes.ErrInvalidArgument)

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
