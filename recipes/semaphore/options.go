package semaphore

import (
	"github.com/zkrecipes/zkrecipes/internal/option"
)

// Option configures a Semaphore. Every recipe's Option has this shape, and
// an option of the same name means the same thing in each.
type Option func(*option.Config) error

// WithParticipantID sets the data of this process's lease nodes, which
// Participants reports (default: mutex.DefaultParticipantID, as Curator).
// It must not be empty.
func WithParticipantID(id string) Option { return Option(option.WithParticipantID(id)) }
