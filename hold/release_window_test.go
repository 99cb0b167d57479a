package hold_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/hold"
)

// lostOnDetach is a Source that is lost the moment a hold detaches, the
// race a Release can meet: the node ends after Release detached the hold
// and before it ended it. It asks the hold's Err right then.
type lostOnDetach struct {
	hold.Source // the methods Release and Err do not use are never called
	mu          sync.Mutex
	loss        error
	errThen     error
}

func (s *lostOnDetach) Attach(*hold.Hold, func(*hold.Hold, error)) error { return nil }
func (s *lostOnDetach) Recipe() (string, string)                         { return "", "" }
func (s *lostOnDetach) Check() error                                     { return s.Loss() }

func (s *lostOnDetach) Loss() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loss
}

func (s *lostOnDetach) Detach(h *hold.Hold) {
	s.mu.Lock()
	s.loss = zkrecipes.ErrSessionLost // detached: its end leaves h alone
	s.mu.Unlock()
	s.errThen = h.Err()
}

// A hold whose node is lost while its Release is under way never says it
// is fine: Err says it is released from the moment Release begins, and
// Release, which began before the loss, reports none.
func TestHoldErrIsNeverNilOnceReleaseHasBegun(t *testing.T) {
	src := &lostOnDetach{}
	h, err := hold.New(src, func(*hold.Hold) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatalf("Release = %v, want nil: the hold was not lost before it", err)
	}
	if !errors.Is(src.errThen, zkrecipes.ErrReleased) {
		t.Fatalf("Err during Release, after a loss = %v, want ErrReleased", src.errThen)
	}
	if !errors.Is(h.Err(), zkrecipes.ErrReleased) {
		t.Fatalf("Err after Release = %v", h.Err())
	}
}
