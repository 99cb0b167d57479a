package semaphore

import (
	"time"

	"github.com/zkrecipes/zkrecipes/internal/option"
)

// Option configures a Semaphore. Every recipe's Option has this shape, and
// an option of the same name means the same thing in each.
type Option func(*option.Config) error

// WithParticipantID sets the data of this process's lease nodes, which
// Participants reports (default: mutex.DefaultParticipantID, as Curator).
// It must not be empty.
func WithParticipantID(id string) Option { return Option(option.WithParticipantID(id)) }

// WithLeaseTime makes every lease end by itself d after it is granted, as
// Redisson's lock(leaseTime): its Done fires with hold.ErrLeaseExpired and its
// node is deleted, even if the holder never releases it (a holder that
// forgets, hangs or deadlocks keeps others out for d at most, not for as
// long as its session lives). Hold.Extend moves the end later. d must be
// positive. The end is measured on this process's clock; like any loss,
// the holder learns of it before the node is deleted, and so before anyone
// else can be granted.
func WithLeaseTime(d time.Duration) Option { return Option(option.WithLeaseTime(d)) }
