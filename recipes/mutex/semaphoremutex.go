package mutex

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine/lease"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// semaphoreRecipe names a SemaphoreMutex in its errors.
const semaphoreRecipe = "semaphore mutex"

// SemaphoreMutex is a distributed mutex that is not reentrant and not tied to
// a goroutine, wire-compatible with Curator's InterProcessSemaphoreMutex: a
// semaphore of one lease (path/locks, path/leases; see package semaphore).
//
// Use it where a lock is taken in one goroutine and given back in another (a
// request handler that locks, a callback that unlocks). The price of not
// being reentrant: Acquire while this process already holds it waits for
// itself (until ctx ends), and TryAcquire returns zkrecipes.ErrWouldBlock.
//
// Acquire returns the hold as a *hold.Hold, as every recipe, with the
// fencing token (Token) and loss signal (Done, Err, Context). Give it back
// with its Release, from any goroutine. There is no SemaphoreMutex.Release:
// without a goroutine to tie a hold to, "release the mutex" cannot say
// which acquisition it means, and a late or repeated one would end a hold
// that another goroutine has just taken. Make one with NewSemaphoreMutex.
type SemaphoreMutex struct {
	sem *lease.Semaphore
}

// NewSemaphoreMutex returns a non-reentrant mutex on path. It sends
// nothing. WithParticipantID sets the data of its lease nodes,
// WithLeaseTime bounds each hold.
func NewSemaphoreMutex(client *framework.Client, path string, opts ...SemaphoreMutexOption) (*SemaphoreMutex, error) {
	if client == nil {
		return nil, framework.RecipeErr(semaphoreRecipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(semaphoreRecipe, path, err)
	}
	cfg, err := framework.Configure(semaphoreRecipe, path, config{}, opts, SemaphoreMutexOption.applySemaphoreMutex)
	if err != nil {
		return nil, err
	}
	id := []byte(cfg.ParticipantID())
	if err := lease.CheckID(client, path, id); err != nil {
		return nil, framework.RecipeErr(semaphoreRecipe, path, err)
	}
	return &SemaphoreMutex{sem: lease.New(client, lease.Config{
		Recipe: semaphoreRecipe, Kind: "semaphore_mutex", Path: path, Max: 1, ID: id, LeaseTime: cfg.lease,
	})}, nil
}

// Path returns the mutex's path.
func (m *SemaphoreMutex) Path() string {
	if m.usable() != nil {
		return ""
	}
	return m.sem.Path()
}

// Acquire blocks until this process holds the mutex, ctx ends (its deadline
// is the timeout), or the SemaphoreMutex is closed. It is not reentrant: if
// the mutex is already held, by this process too, Acquire waits.
func (m *SemaphoreMutex) Acquire(ctx context.Context) (*hold.Hold, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	leases, err := m.sem.Acquire(ctx, 1)
	if err != nil {
		return nil, err
	}
	return leases[0], nil
}

// TryAcquire takes the mutex only if it is free at once, else it returns
// an error wrapping zkrecipes.ErrWouldBlock (also when this process holds it)
// and leaves nothing behind.
func (m *SemaphoreMutex) TryAcquire(ctx context.Context) (*hold.Hold, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	leases, err := m.sem.TryAcquire(ctx, 1)
	if err != nil {
		return nil, err
	}
	return leases[0], nil
}

// Held returns this SemaphoreMutex's hold, if it holds the mutex (a lease
// it took is not released yet) and the hold is still trusted: once it is
// lost, Held says false, though the hold is still to be released.
func (m *SemaphoreMutex) Held() (*hold.Hold, bool) {
	hs := m.Holds()
	if len(hs) == 0 || hs[0].Err() != nil {
		return nil, false // a lost hold is never handed out
	}
	return hs[0], true
}

// Holds returns this SemaphoreMutex's hold, if it holds the mutex, as a
// list: len(Holds()) > 0 is Curator's isAcquiredInThisProcess.
func (m *SemaphoreMutex) Holds() []*hold.Hold {
	if m.usable() != nil {
		return nil
	}
	return m.sem.Holds()
}

// Participants returns the participant ids of the lease nodes: the holder's,
// and that of an acquirer waiting for it, if any.
func (m *SemaphoreMutex) Participants(ctx context.Context) ([]string, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	return m.sem.Participants(ctx)
}

// ParticipantNodes returns the lease nodes in sequence order (full paths).
func (m *SemaphoreMutex) ParticipantNodes(ctx context.Context) ([]string, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	return m.sem.ParticipantNodes(ctx)
}

// Close ends waits in progress with zkrecipes.ErrClosed and releases the
// mutex if this SemaphoreMutex holds it, deleting its node. It is
// idempotent, waits for the delete to be sent at most
// framework.WithReleaseTimeout, and does not close the client.
func (m *SemaphoreMutex) Close() error {
	if err := m.usable(); err != nil {
		return err
	}
	return m.sem.Close()
}

// usable says why m cannot be used: it is nil or a zero SemaphoreMutex.
func (m *SemaphoreMutex) usable() error {
	if m == nil || m.sem == nil {
		return framework.Invalid(semaphoreRecipe, "SemaphoreMutex", "NewSemaphoreMutex")
	}
	return nil
}
