package retry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/retry"
)

// A nil context is bad input: Do refuses it without calling op, and works
// as before with a context.
func TestDoRefusesANilContext(t *testing.T) {
	calls := 0
	op := func(context.Context) error { calls++; return nil }
	var nilCtx context.Context
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("a nil context panics: %v", p)
			}
		}()
		err = retry.Do(nilCtx, retry.NTimes(3, 0), op)
	}()
	if !errors.Is(err, zkrecipes.ErrInvalidArgument) {
		t.Fatalf("Do(nil): %v, want an error matching zkrecipes.ErrInvalidArgument", err)
	}
	if calls != 0 {
		t.Fatalf("op was called %d times with a nil context", calls)
	}
	if err := retry.Do(context.Background(), retry.NTimes(3, 0), op); err != nil || calls != 1 {
		t.Fatalf("Do after: %v, %d calls", err, calls)
	}
}

// A Pacer's Wait takes a nil context as ended instead of panicking.
func TestPacerWaitTakesANilContextAsEnded(t *testing.T) {
	var nilCtx context.Context
	pc := retry.NTimes(1, 0).Pacer()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("a nil context panics: %v", p)
		}
	}()
	if pc.Wait(nilCtx) {
		t.Fatal("Wait(nil) reported a pause slept")
	}
}
