package countdown

import "github.com/zkrecipes/zkrecipes/internal/option"

// Option configures a Latch. Every recipe's Option has this shape, and an
// option of the same name means the same thing in each.
type Option func(*option.Config) error

// WithParticipantID sets the data of the nodes this handle makes (its
// count-downs, and the latch's gen- child if it sets the count), to tell
// who counted down (default: the host's participant id, as Curator). It
// must not be empty.
func WithParticipantID(id string) Option { return Option(option.WithParticipantID(id)) }
