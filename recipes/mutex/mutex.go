package mutex

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/engine/reentrant"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// lockName is Curator's node name for InterProcessMutex.
const lockName = "lock-"

// recipe names a Mutex in its errors.
const recipe = "mutex"

// Mutex is a fair distributed mutex, wire-compatible with Curator's
// InterProcessMutex: contenders queue as ephemeral-sequential nodes
// path/_c_<uuid>-lock-<seq> and are granted strictly in sequence order.
//
// It is reentrant per goroutine, as Curator's is per thread: the goroutine
// holding it may Acquire again (no network) and must Release as many times.
// Different goroutines of one process using one Mutex contend like separate
// processes. A Mutex is safe for concurrent use; make one with New.
type Mutex struct {
	client *framework.Client
	path   string
	lock   *reentrant.Lock
}

// New returns a mutex on the lock directory path. It sends nothing.
func New(client *framework.Client, path string, opts ...Option) (*Mutex, error) {
	cfg, err := lockConfig(client, path, opts)
	if err != nil {
		return nil, err
	}
	return &Mutex{client: client, path: path, lock: reentrant.New(client, cfg)}, nil
}

// lockConfig checks what New and Acquire are given, and says what lock
// they make of it: the same queue, so that a Mutex and a one-off Acquire
// on one path are one lock.
func lockConfig(client *framework.Client, path string, opts []Option) (reentrant.Config, error) {
	if client == nil {
		return reentrant.Config{}, framework.RecipeErr(recipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return reentrant.Config{}, framework.RecipeErr(recipe, path, err)
	}
	cfg, err := framework.Configure(recipe, path, config{}, opts, Option.applyMutex)
	if err != nil {
		return reentrant.Config{}, err
	}
	if cfg.watcher != nil && cfg.watcher.Client() != client {
		return reentrant.Config{}, framework.RecipeErr(recipe, path, fmt.Errorf("%w: a watcher of another client", zkrecipes.ErrInvalidArgument))
	}
	id := []byte(cfg.ParticipantID())
	if err := engine.CheckData(client, path, id, lockName); err != nil {
		return reentrant.Config{}, framework.RecipeErr(recipe, path, err)
	}
	return reentrant.Config{Recipe: recipe, Kind: "mutex",
		Request:   engine.Request{Dir: path, Name: lockName, Data: id, Driver: engine.First(1)},
		Revocable: cfg.revocable, LeaseTime: cfg.lease, Watcher: cfg.watcher}, nil
}

// Path returns the lock directory.
func (m *Mutex) Path() string {
	if m == nil {
		return ""
	}
	return m.path
}

// Acquire blocks until the calling goroutine holds the mutex, ctx ends (its
// deadline is the timeout), or the Mutex is closed. If the goroutine already
// holds it, Acquire returns at once with a new Hold on the same node (same
// token), one more acquisition to release; if that hold was lost, it
// returns an error wrapping zkrecipes.ErrHoldLost and the loss instead.
func (m *Mutex) Acquire(ctx context.Context) (*hold.Hold, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	return m.lock.Acquire(ctx, false)
}

// TryAcquire takes the mutex only if no one else holds or waits for it: it
// queues, and if it is not first, leaves the queue and returns an error
// wrapping zkrecipes.ErrWouldBlock.
func (m *Mutex) TryAcquire(ctx context.Context) (*hold.Hold, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	return m.lock.Acquire(ctx, true)
}

// Release gives up the calling goroutine's most recent acquisition, as
// Curator's release (Hold.Release gives up a given one, from any
// goroutine); the last one deletes the lock node. Release returns once the
// delete is on its way to the server, which applies it before anything
// this client sends afterwards; if the server cannot be reached, the client
// goes on deleting in the background (guaranteed; Client.Drain waits for
// it). The wait is bounded by framework.WithReleaseTimeout.
//
// It returns an error wrapping zkrecipes.ErrNotHeld if the goroutine holds
// nothing, zkrecipes.ErrNotOwner if another goroutine holds the mutex. If the
// hold was lost before (see Hold.Err), Release still cleans up and returns
// an error wrapping zkrecipes.ErrHoldLost: the Mutex is usable again.
func (m *Mutex) Release() error {
	if err := m.usable(); err != nil {
		return err
	}
	return m.lock.Release()
}

// Held returns the calling goroutine's most recent acquisition, if it
// holds the mutex, as Curator's isOwnedByCurrentThread, and the hold is
// still trusted as far as it knows (hold.Hold.Err): a lost hold says false
// (it is still the goroutine's to release).
func (m *Mutex) Held() (*hold.Hold, bool) {
	if m.usable() != nil {
		return nil, false
	}
	return m.lock.Held()
}

// Holds returns the open holds of this Mutex in this process, whichever
// goroutine holds them: empty unless one goroutine holds the mutex (its
// nested acquisitions share one node). len(Holds()) > 0 is Curator's
// isAcquiredInThisProcess.
func (m *Mutex) Holds() []*hold.Hold {
	if m.usable() != nil {
		return nil
	}
	return m.lock.Holds()
}

// Participants returns the participant ids of the contenders in queue
// order: the holder first.
func (m *Mutex) Participants(ctx context.Context) ([]string, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	return Participants(ctx, m.client, m.path)
}

// ParticipantNodes returns the lock nodes in queue order (full paths).
func (m *Mutex) ParticipantNodes(ctx context.Context) ([]string, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	return ParticipantNodes(ctx, m.client, m.path)
}

// Close ends waits in progress with zkrecipes.ErrClosed and releases every
// hold of the Mutex, deleting its nodes; a later Release of one of its
// holds returns hold.ErrReleasedByClose. It is idempotent: later calls
// return nil, and Acquire and Release after it return zkrecipes.ErrClosed.
// It waits only for each node's delete to be sent (at most
// framework.WithReleaseTimeout); the client is not closed.
func (m *Mutex) Close() error {
	if err := m.usable(); err != nil {
		return err
	}
	return m.lock.Close()
}

// usable says why m cannot be used: it is nil or a zero Mutex.
func (m *Mutex) usable() error {
	if m == nil || m.lock == nil {
		return framework.Invalid(recipe, "Mutex", "New")
	}
	return nil
}

// ParticipantNodes lists the lock nodes under path in Curator's queue order.
func ParticipantNodes(ctx context.Context, client *framework.Client, path string) ([]string, error) {
	if err := engine.CheckCall(client, ctx); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	nodes, err := engine.Nodes(ctx, client, path, lockName)
	return nodes, framework.RecipeErr(recipe, path, err)
}

// Participants returns the participant ids (node data) of the contenders
// under path in queue order, holder first. It works on any Curator lock
// directory (InterProcessMutex, LeaderSelector).
func Participants(ctx context.Context, client *framework.Client, path string) ([]string, error) {
	if err := engine.CheckCall(client, ctx); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	ids, err := engine.Participants(ctx, client, path, lockName)
	return ids, framework.RecipeErr(recipe, path, err)
}

// Revoke asks the holder of the lock node at nodePath to release, with
// Curator's protocol: the node's data becomes "__REVOKE__". A holder made
// with WithRevocable sees it on Hold.Revoked and decides what to do. A node
// that is gone was released already: that is no error.
func Revoke(ctx context.Context, client *framework.Client, nodePath string) error {
	if err := engine.CheckCall(client, ctx); err != nil {
		return framework.RecipeErr(recipe, nodePath, err)
	}
	_, err := client.Set(ctx, nodePath, []byte(engine.RevokeMessage), -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return framework.RecipeErr(recipe, nodePath, engine.Err(err, false))
}
