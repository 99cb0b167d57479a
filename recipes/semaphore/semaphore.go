package semaphore

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine/lease"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// recipe names a Semaphore in its errors.
const recipe = "semaphore"

// Semaphore is a distributed counting semaphore, wire-compatible with
// Curator's InterProcessSemaphoreV2 (see the package doc for the protocol).
// It is safe for concurrent use; its leases are independent holds. Make one
// with New or NewShared.
type Semaphore struct {
	s *lease.Semaphore
}

// New returns a semaphore on path whose maximum is maxLeases (at least 1).
// As in Curator, nothing checks that every process uses the same maximum:
// make sure they do, or use NewShared. It sends nothing.
func New(client *framework.Client, path string, maxLeases int, opts ...Option) (*Semaphore, error) {
	cfg, err := build(client, path, opts)
	if err != nil {
		return nil, err
	}
	if maxLeases < 1 {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: max leases %d: must be at least 1", zkrecipes.ErrInvalidArgument, maxLeases))
	}
	cfg.Max = maxLeases
	return &Semaphore{lease.New(client, cfg)}, nil
}

// NewShared returns a semaphore on path whose maximum is the value of the
// Curator SharedCount node at countPath (a 4-byte big-endian integer, as
// shared.Count writes it). The semaphore follows the node with a watch
// until Close: raising the count lets waiting acquirers in, lowering it
// makes new acquirers wait. Until the node exists and holds a count,
// acquirers wait.
func NewShared(client *framework.Client, path, countPath string, opts ...Option) (*Semaphore, error) {
	cfg, err := build(client, path, opts)
	if err != nil {
		return nil, err
	}
	if err := framework.ValidateRecipePath(countPath); err != nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("count path: %w", err))
	}
	cfg.CountPath, cfg.DecodeMax = countPath, decodeMax
	return &Semaphore{lease.New(client, cfg)}, nil
}

// decodeMax reads the maximum as Curator's SharedCount writes it.
func decodeMax(data []byte) (int, error) {
	n, err := shared.DecodeCount(data)
	return int(n), err
}

func build(client *framework.Client, path string, opts []Option) (lease.Config, error) {
	if client == nil {
		return lease.Config{}, framework.RecipeErr(recipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return lease.Config{}, framework.RecipeErr(recipe, path, err)
	}
	c, err := framework.Configure(recipe, path, config{}, opts, Option.applySemaphore)
	if err != nil {
		return lease.Config{}, err
	}
	id := []byte(c.ParticipantID())
	if err := lease.CheckID(client, path, id); err != nil {
		return lease.Config{}, framework.RecipeErr(recipe, path, err)
	}
	return lease.Config{Recipe: recipe, Kind: "semaphore", Path: path, ID: id, LeaseTime: c.lease}, nil
}

// Path returns the semaphore's path.
func (s *Semaphore) Path() string {
	if s.usable() != nil {
		return ""
	}
	return s.s.Path()
}

// MaxLeases returns the maximum number of leases: the fixed one at once,
// the shared count as last read, waiting until it has been read once, ctx
// ends, or the Semaphore or its client is closed (zkrecipes.ErrClosed: the
// count will not be read any more).
func (s *Semaphore) MaxLeases(ctx context.Context) (int, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	return s.s.MaxLeases(ctx)
}

// Acquire blocks until it holds n leases, ctx ends (its deadline is the
// timeout), or the Semaphore is closed. n must be at least 1, and at most a
// fixed maximum (else zkrecipes.ErrInvalidArgument: it could never
// succeed). It returns all n leases or none:
// whatever it took before failing is given back. Release each lease when
// done (any goroutine may; hold.ReleaseAll releases several).
func (s *Semaphore) Acquire(ctx context.Context, n int) ([]*hold.Hold, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	return s.s.Acquire(ctx, n)
}

// TryAcquire takes n leases only if they are free at once, else it returns
// an error wrapping zkrecipes.ErrWouldBlock and leaves nothing behind. It does
// not queue behind a waiting Acquire, so it fails while anyone waits for
// room; it may also fail when several processes try for the last free
// leases at the same moment. ctx bounds the round trips.
func (s *Semaphore) TryAcquire(ctx context.Context, n int) ([]*hold.Hold, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	return s.s.TryAcquire(ctx, n)
}

// Holds returns the leases this Semaphore holds now, in this process (not
// released, not lost to a lease time).
func (s *Semaphore) Holds() []*hold.Hold {
	if s.usable() != nil {
		return nil
	}
	return s.s.Holds()
}

// ParticipantNodes returns the lease nodes in sequence order (full paths).
// As Curator's getParticipantNodes, they include the node of an acquirer
// that is waiting for room (at most one: it holds the internal mutex).
func (s *Semaphore) ParticipantNodes(ctx context.Context) ([]string, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	return s.s.ParticipantNodes(ctx)
}

// Participants returns the participant ids (node data) of the lease nodes
// in sequence order (see ParticipantNodes). Curator's leases carry its
// default node data, the host's address.
func (s *Semaphore) Participants(ctx context.Context) ([]string, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	return s.s.Participants(ctx)
}

// Close ends waits in progress with zkrecipes.ErrClosed, releases every
// lease still held (deleting its node) and stops following the shared
// count; it leaves the count node, which is shared. Later acquires return
// zkrecipes.ErrClosed; releasing a lease afterwards returns an error
// matching both zkrecipes.ErrReleased and zkrecipes.ErrClosed. It is idempotent,
// waits for each lease's delete to be sent at most
// framework.WithReleaseTimeout, and does not close the client; no
// goroutine of the Semaphore survives it.
func (s *Semaphore) Close() error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.s.Close()
}

// usable says why s cannot be used: it is nil or a zero Semaphore.
func (s *Semaphore) usable() error {
	if s == nil || s.s == nil {
		return framework.RecipeErr(recipe, "", fmt.Errorf("%w: a nil or zero Semaphore: make one with New", zkrecipes.ErrInvalidArgument))
	}
	return nil
}
