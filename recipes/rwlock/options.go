package rwlock

import (
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
)

// Option configures an RWLock (New).
type Option interface{ applyRWLock(*config) }

type option func(*config)

func (f option) applyRWLock(c *config) { f(c) }

type config struct {
	framework.Settings
	revocable bool
	lease     time.Duration
}

// WithParticipantID sets the data of this process's nodes (default
// framework.DefaultParticipantID(), as Curator). It must not be empty.
func WithParticipantID(id string) Option {
	return option(func(c *config) { c.SetParticipantID(id) })
}

// WithRevocable makes holds of both sides follow Curator's revocation
// requests (mutex.Revoke on a node; hold.Hold.Revoked), as each side of
// Curator's lock is a revocable InterProcessMutex.
func WithRevocable() Option { return option(func(c *config) { c.revocable = true }) }

// WithLeaseTime makes every read and write hold end by itself d after it
// is granted, as Redisson's lock(leaseTime): its Done fires with
// zkrecipes.ErrLeaseExpired and its node is deleted, even if the holder never
// releases it (a holder that forgets, hangs or deadlocks keeps others out
// for d at most, not for as long as its session lives). Hold.Extend moves
// the end later. d must be positive. The end is measured on this process's
// clock; like any loss, the holder learns of it before the node is
// deleted, and so before anyone else can be granted. A reentrant acquire
// renews the lease to at least d from then; a hold a downgrade makes is a
// read hold, with a lease of its own from then.
func WithLeaseTime(d time.Duration) Option {
	return option(func(c *config) {
		if d <= 0 {
			c.Invalidf("lease time %v is not positive", d)
		}
		c.lease = d
	})
}
