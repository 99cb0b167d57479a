package counter

import (
	"time"

	"github.com/zkrecipes/zkrecipes/internal/option"
	"github.com/zkrecipes/zkrecipes/internal/participant"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Option configures a Value, Long or Integer. Every recipe's Option has
// this shape, and an option of the same name means the same thing in
// each.
type Option func(*option.Config) error

// WithRetryPolicy sets how often, and after what sleeps, an operation
// tries its compare-and-set again after losing to another writer: Curator's
// RetryPolicy argument (default: retry.Default()).
func WithRetryPolicy(p retry.Policy) Option { return Option(option.WithRetryPolicy(p)) }

// WithPromotedToLock is Curator's PromotedToLock: once the optimistic
// tries are used up, take the mutex at lockPath, waiting at most timeout
// for it, and try again under it as policy allows. lockPath must be a
// valid path and timeout positive. The lock path must not be the
// counter's own path (the counter is a plain node, the lock a directory).
func WithPromotedToLock(lockPath string, timeout time.Duration, policy retry.Policy) Option {
	return Option(option.WithPromotedToLock(lockPath, timeout, policy))
}

// WithParticipantID sets the data of the promoted mutex's nodes (default:
// DefaultParticipantID, as Curator). It must not be empty.
func WithParticipantID(id string) Option { return Option(option.WithParticipantID(id)) }

// DefaultParticipantID is the participant id used when none is given:
// Curator's default, the address this host's name resolves to.
func DefaultParticipantID() string { return participant.Default() }
