package mutex

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/option"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// ErrNotRevocable: WithRevocable given to NewSemaphoreMutex. Curator's
// revocation protocol is the mutex's; a semaphore lease cannot be revoked.
// It is an ErrInvalidOption too.
var ErrNotRevocable = fmt.Errorf("mutex: %w: a SemaphoreMutex is not revocable", ErrInvalidOption)

// SemaphoreMutex is a distributed mutex that is not reentrant and not tied to
// a goroutine, wire-compatible with Curator's InterProcessSemaphoreMutex: a
// semaphore of one lease (path/locks, path/leases; see package semaphore).
//
// Use it where a lock is taken in one goroutine and given back in another (a
// request handler that locks, a callback that unlocks). The price of not
// being reentrant: Acquire while this process already holds it waits for
// itself (until ctx ends), and TryAcquire returns ErrWouldBlock.
//
// Acquire returns the hold as a *hold.Hold, as every recipe, with the
// fencing token (Token) and loss signal (Done, Err, Context). Give it back
// with its Release, from any goroutine. There is no SemaphoreMutex.Release:
// without a goroutine to tie a hold to, "release the mutex" cannot say
// which acquisition it means, and a late or repeated one would end a hold
// that another goroutine has just taken.
type SemaphoreMutex struct {
	sem *semaphore.Semaphore
}

// NewSemaphoreMutex returns a non-reentrant mutex on path. WithParticipantID
// sets the data of its lease nodes, WithLeaseTime bounds each hold;
// WithRevocable is refused (ErrNotRevocable).
func NewSemaphoreMutex(client *framework.Client, path string, opts ...Option) (*SemaphoreMutex, error) {
	if client == nil {
		return nil, fmt.Errorf("mutex: %w", ErrNilClient)
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, fmt.Errorf("mutex: %w", err)
	}
	cfg, err := option.Build("mutex", []option.Name{option.ParticipantID, option.Revocable, option.LeaseTime}, opts)
	if err != nil {
		return nil, err
	}
	if cfg.Revocable {
		return nil, ErrNotRevocable
	}
	semOpts := []semaphore.Option{semaphore.WithParticipantID(string(cfg.ID)), semaphore.Option(option.WithKind(metrics.SemaphoreMutex))}
	if cfg.Lease > 0 {
		semOpts = append(semOpts, semaphore.WithLeaseTime(cfg.Lease))
	}
	sem, err := semaphore.New(client, path, 1, semOpts...)
	if err != nil {
		return nil, err
	}
	return &SemaphoreMutex{sem: sem}, nil
}

// Path returns the mutex's path.
func (m *SemaphoreMutex) Path() string { return m.sem.Path() }

// Acquire blocks until this process holds the mutex, ctx ends (its deadline
// is the timeout), or the SemaphoreMutex is closed. It is not reentrant: if
// the mutex is already held, by this process too, Acquire waits.
func (m *SemaphoreMutex) Acquire(ctx context.Context) (*hold.Hold, error) {
	leases, err := m.sem.Acquire(ctx, 1)
	if err != nil {
		return nil, err
	}
	return leases[0], nil
}

// TryAcquire takes the mutex only if it is free at once, else it returns
// ErrWouldBlock (also when this process holds it) and leaves nothing
// behind.
func (m *SemaphoreMutex) TryAcquire(ctx context.Context) (*hold.Hold, error) {
	leases, err := m.sem.TryAcquire(ctx, 1)
	if err != nil {
		return nil, err
	}
	return leases[0], nil
}

// HeldInProcess reports whether this SemaphoreMutex holds the mutex (a
// lease it took is not released yet), as Curator's isAcquiredInThisProcess.
func (m *SemaphoreMutex) HeldInProcess() bool { return len(m.sem.Leases()) > 0 }

// Participants returns the participant ids of the lease nodes: the holder's,
// and that of an acquirer waiting for it, if any.
func (m *SemaphoreMutex) Participants(ctx context.Context) ([]string, error) {
	return m.sem.Participants(ctx)
}

// ParticipantNodes returns the lease nodes in sequence order (full paths).
func (m *SemaphoreMutex) ParticipantNodes(ctx context.Context) ([]string, error) {
	return m.sem.ParticipantNodes(ctx)
}

// Close ends waits in progress with ErrClosed and releases the mutex if this
// SemaphoreMutex holds it. The client is not closed.
func (m *SemaphoreMutex) Close() error { return m.sem.Close() }
