package mutex

import (
	"time"

	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Option configures a Mutex (New), and a one-off Acquire alike: every
// one of them means the same for a hold either way.
type Option interface{ applyMutex(*config) }

// SemaphoreMutexOption configures a SemaphoreMutex (NewSemaphoreMutex).
type SemaphoreMutexOption interface{ applySemaphoreMutex(*config) }

// CommonOption configures a Mutex and a SemaphoreMutex alike: it is an
// Option and a SemaphoreMutexOption.
type CommonOption interface {
	Option
	SemaphoreMutexOption
}

type commonOption func(*config)

func (f commonOption) applyMutex(c *config)          { f(c) }
func (f commonOption) applySemaphoreMutex(c *config) { f(c) }

type mutexOption func(*config)

func (f mutexOption) applyMutex(c *config) { f(c) }

type config struct {
	framework.Settings
	revocable bool
	lease     time.Duration
	watcher   *engine.Watcher
}

// WithParticipantID sets the data of this process's lock nodes, which
// Participants reports (default: framework.DefaultParticipantID(), as
// Curator). It must not be empty.
func WithParticipantID(id string) CommonOption {
	return commonOption(func(c *config) { c.SetParticipantID(id) })
}

// WithLeaseTime makes every hold end by itself d after it is granted, as
// Redisson's lock(leaseTime): its Done fires with zkrecipes.ErrLeaseExpired and
// its node is deleted, even if the holder never releases it (a holder that
// forgets, hangs or deadlocks keeps others out for d at most, not for as
// long as its session lives). Hold.Extend moves the end later. d must be
// positive. The end is measured on this process's clock; like any loss,
// the holder learns of it before the node is deleted, and so before anyone
// else can be granted.
// A reentrant acquire renews the lease to at least d from then. Once the
// lease has run out, the goroutine that forgot its hold may Acquire again
// (a new hold, as Redisson's); the forgotten hold's Release, by its handle,
// still says zkrecipes.ErrLeaseExpired.
func WithLeaseTime(d time.Duration) CommonOption {
	return commonOption(func(c *config) {
		if d <= 0 {
			c.Invalidf("lease time %v is not positive", d)
		}
		c.lease = d
	})
}

// WithRevocable makes a Mutex's holds follow Curator's revocation requests
// (see Revoke and hold.Hold.Revoked). Its holds watch their node from the
// grant (a revocation request must be seen unasked), where others do from
// the first wait on them: a goroutine and a watch per hold. A
// SemaphoreMutex is not revocable: Curator's revocation protocol is the
// mutex's.
func WithRevocable() Option { return mutexOption(func(c *config) { c.revocable = true }) }

// WithWatcher has w follow the Mutex's holds (engine.Watcher): a process
// that holds many mutexes at once on one client (a partitioner's items)
// shares w between them, and a hold then costs no goroutine of its own
// while it is held. Each hold learns of its loss as it would without: the
// loss signal, its node deleted or re-owned, a revocation request, and
// from its grant, not from the first wait on it: the cost is a read of
// the node at each grant. A nil w, or a Watcher of
// another client, is refused by New with zkrecipes.ErrInvalidArgument.
func WithWatcher(w *engine.Watcher) Option {
	return mutexOption(func(c *config) {
		if w == nil {
			c.Invalidf("nil watcher")
		}
		c.watcher = w
	})
}
