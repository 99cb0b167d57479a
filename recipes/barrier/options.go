package barrier

import "github.com/zkrecipes/zkrecipes/internal/option"

// Option configures a Barrier or a DoubleBarrier. Every recipe's Option has
// this shape, and an option of the same name means the same thing in each.
type Option func(*option.Config) error

// WithParticipantID sets the data of the nodes this process makes (default:
// the local address, as Curator). It must not be empty.
func WithParticipantID(id string) Option { return Option(option.WithParticipantID(id)) }
