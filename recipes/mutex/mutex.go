package mutex

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	ihold "github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/option"
	"github.com/zkrecipes/zkrecipes/internal/reentrant"
)

// The errors of this package: those every recipe shares (package hold
// documents them), under the same names.
var (
	ErrNotOwner         = hold.ErrNotOwner
	ErrNotHeld          = hold.ErrNotHeld
	ErrWouldBlock       = hold.ErrWouldBlock
	ErrClosed           = hold.ErrClosed
	ErrNilClient        = hold.ErrNilClient
	ErrInvalidOption    = hold.ErrInvalidOption
	ErrHoldLost         = hold.ErrHoldLost
	ErrOutcomeUnknown   = hold.ErrOutcomeUnknown
	ErrFenceCheckFailed = hold.ErrFenceCheckFailed
	ErrSuspended        = hold.ErrSuspended
	ErrSessionLost      = hold.ErrSessionLost
	ErrNodeDeleted      = hold.ErrNodeDeleted
	ErrReleased         = hold.ErrReleased
	ErrLeaseExpired     = hold.ErrLeaseExpired
	ErrNoLeaseTime      = hold.ErrNoLeaseTime
)

// lockName is Curator's node name for InterProcessMutex.
const lockName = "lock-"

// Mutex is a fair distributed mutex, wire-compatible with Curator's
// InterProcessMutex: contenders queue as ephemeral-sequential nodes
// path/_c_<uuid>-lock-<seq> and are granted strictly in sequence order.
//
// It is reentrant per goroutine, as Curator's is per thread: the goroutine
// holding it may Acquire again (no network) and must Release as many times.
// Different goroutines of one process using one Mutex contend like separate
// processes. A Mutex is safe for concurrent use.
type Mutex struct {
	client *framework.Client
	path   string
	lock   *reentrant.Lock
}

// New returns a mutex on the lock directory path.
func New(client *framework.Client, path string, opts ...Option) (*Mutex, error) {
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
	if err := cfg.CheckQueueID(client, "mutex", path, lockName); err != nil {
		return nil, err
	}
	l := reentrant.New(client, cfg.KindOr(metrics.Mutex), contend.Request{Dir: path, Name: lockName, Data: cfg.ID, Driver: contend.First(1)}, cfg.Revocable, cfg.Lease)
	return &Mutex{client: client, path: path, lock: l}, nil
}

// Path returns the lock directory.
func (m *Mutex) Path() string { return m.path }

// Acquire blocks until the calling goroutine holds the mutex, ctx ends (its
// deadline is the timeout), or the Mutex is closed. If the goroutine already
// holds it, Acquire returns at once with a new Hold on the same node (same
// token), one more acquisition to release; if that hold was lost, it
// returns an error wrapping ErrHoldLost and the loss instead.
func (m *Mutex) Acquire(ctx context.Context) (*hold.Hold, error) { return m.lock.Acquire(ctx, false) }

// TryAcquire takes the mutex only if no one else holds or waits for it: it
// queues, and if it is not first, leaves the queue and returns ErrWouldBlock.
func (m *Mutex) TryAcquire(ctx context.Context) (*hold.Hold, error) { return m.lock.Acquire(ctx, true) }

// Release gives up the calling goroutine's most recent acquisition, as
// Curator's release (Hold.Release gives up a given one, from any
// goroutine); the last one deletes the lock node. Release returns once the delete is on its way to the
// server, which applies it before anything this client sends afterwards; if
// the server cannot be reached, the client goes on deleting in the
// background (guaranteed; Client.Drain waits for it).
//
// If the hold was lost before (see Hold.Err), Release still cleans up and
// returns an error wrapping ErrHoldLost: the Mutex is usable again.
func (m *Mutex) Release() error { return m.lock.Release() }

// Held reports whether the calling goroutine holds the mutex (and returns
// the hold), as Curator's isOwnedByCurrentThread.
func (m *Mutex) Held() (*hold.Hold, bool) { return m.lock.Held() }

// HeldInProcess reports whether any goroutine holds the mutex through this
// Mutex, as Curator's isAcquiredInThisProcess.
func (m *Mutex) HeldInProcess() bool { return m.lock.HeldInProcess() }

// Participants returns the participant ids of the contenders in queue order:
// the holder first.
func (m *Mutex) Participants(ctx context.Context) ([]string, error) {
	return Participants(ctx, m.client, m.path)
}

// ParticipantNodes returns the lock nodes in queue order (full paths).
func (m *Mutex) ParticipantNodes(ctx context.Context) ([]string, error) {
	return ParticipantNodes(ctx, m.client, m.path)
}

// Close ends waits in progress with ErrClosed and releases every hold of the
// Mutex (deleting the nodes). It is idempotent: later calls return nil, and
// Acquire and Release after it return ErrClosed. It is bounded: it waits
// only for each node's delete to be sent, at most contend's five seconds,
// after which the client deletes it in the background. The client is not
// closed.
func (m *Mutex) Close() error { return m.lock.Close() }

// ParticipantNodes lists the lock nodes under path in Curator's queue order.
func ParticipantNodes(ctx context.Context, client *framework.Client, path string) ([]string, error) {
	if client == nil {
		return nil, fmt.Errorf("mutex: %w", ErrNilClient)
	}
	return contend.Nodes(ctx, client, path, lockName)
}

// Participants returns the participant ids (node data) of the contenders
// under path in queue order, holder first. It works on any Curator lock
// directory (InterProcessMutex, LeaderSelector).
func Participants(ctx context.Context, client *framework.Client, path string) ([]string, error) {
	if client == nil {
		return nil, fmt.Errorf("mutex: %w", ErrNilClient)
	}
	return contend.Participants(ctx, client, path, lockName)
}

// Revoke asks the holder of the lock node at nodePath to release, with
// Curator's protocol: the node's data becomes "__REVOKE__". A holder made
// with WithRevocable sees it on Hold.Revoked and decides what to do.
func Revoke(ctx context.Context, client *framework.Client, nodePath string) error {
	if client == nil {
		return fmt.Errorf("mutex: %w", ErrNilClient)
	}
	_, err := client.Set(ctx, nodePath, []byte(ihold.RevokeMessage), -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil // already released
	}
	if err != nil {
		return fmt.Errorf("mutex: revoke %s: %w", nodePath, contend.Err(err, false))
	}
	return nil
}
