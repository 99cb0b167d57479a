package mutex

import (
	"time"

	"github.com/zkrecipes/zkrecipes/internal/option"
	"github.com/zkrecipes/zkrecipes/internal/participant"
)

// Option configures a Mutex or a SemaphoreMutex. Every recipe's Option has
// this shape, and an option of the same name means the same thing in each.
type Option func(*option.Config) error

// WithParticipantID sets the data of this process's lock nodes, which
// Participants reports (default: DefaultParticipantID, as Curator). It must
// not be empty.
func WithParticipantID(id string) Option { return Option(option.WithParticipantID(id)) }

// WithRevocable makes holds follow Curator's revocation requests (see Revoke
// and hold.Hold.Revoked). It costs nothing more: every hold watches its own
// node anyway, to learn if someone else deletes it. A SemaphoreMutex is not
// revocable (framework.ErrInvalidArgument).
func WithRevocable() Option { return Option(option.WithRevocable()) }

// WithLeaseTime makes every hold end by itself d after it is granted, as
// Redisson's lock(leaseTime): its Done fires with hold.ErrLeaseExpired and its
// node is deleted, even if the holder never releases it (a holder that
// forgets, hangs or deadlocks keeps others out for d at most, not for as
// long as its session lives). Hold.Extend moves the end later. d must be
// positive. The end is measured on this process's clock; like any loss,
// the holder learns of it before the node is deleted, and so before anyone
// else can be granted.
// A reentrant acquire renews the lease to at least d from then. Once the
// lease has run out, the goroutine that forgot its hold may Acquire again
// (a new hold, as Redisson's); the forgotten hold's Release, by its handle,
// still says hold.ErrLeaseExpired.
func WithLeaseTime(d time.Duration) Option { return Option(option.WithLeaseTime(d)) }

// DefaultParticipantID is Curator's default participant id: the address this
// host's name resolves to (Java's InetAddress.getLocalHost().getHostAddress(),
// often 127.0.1.1 or 127.0.0.1 on Debian), else the hostname itself. Every
// recipe uses it unless given WithParticipantID.
func DefaultParticipantID() string { return participant.Default() }
