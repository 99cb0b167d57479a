package semaphore

import (
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
)

// Option configures a Semaphore (New, NewShared).
type Option interface{ applySemaphore(*config) }

type option func(*config)

func (f option) applySemaphore(c *config) { f(c) }

type config struct {
	framework.Settings
	lease time.Duration
}

// WithParticipantID sets the data of this process's lease nodes, which
// Participants reports (default: framework.DefaultParticipantID(), as
// Curator). It must not be empty.
func WithParticipantID(id string) Option {
	return option(func(c *config) { c.SetParticipantID(id) })
}

// WithLeaseTime makes every lease end by itself d after it is granted, as
// Redisson's lock(leaseTime): its Done fires with zkrecipes.ErrLeaseExpired and
// its node is deleted, even if the holder never releases it (a holder that
// forgets, hangs or deadlocks keeps others out for d at most, not for as
// long as its session lives). Hold.Extend moves the end later. d must be
// positive. The end is measured on this process's clock; like any loss,
// the holder learns of it before the node is deleted, and so before anyone
// else can be granted.
func WithLeaseTime(d time.Duration) Option {
	return option(func(c *config) {
		if d <= 0 {
			c.Invalidf("lease time %v is not positive", d)
		}
		c.lease = d
	})
}
