package hold_test

import (
	"errors"
	"testing"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/hold"
)

// A recipe author's bad input to New is a typed error, never a Hold whose
// methods would panic.
func TestNewRefusesANilSourceOrRelease(t *testing.T) {
	h, err := hold.New(nil, func(*hold.Hold) error { return nil })
	if h != nil || !errors.Is(err, zkrecipes.ErrInvalidArgument) {
		t.Fatalf("New(nil, f) = %v, %v; want nil and ErrInvalidArgument", h, err)
	}
	// The nil Hold it returns is safe: it says it is not held.
	if err := h.Release(); !errors.Is(err, zkrecipes.ErrInvalidArgument) {
		t.Fatalf("Release of a nil Hold = %v", err)
	}
}
