package mutex

import (
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
// revocable (ErrNotRevocable).
func WithRevocable() Option { return Option(option.WithRevocable()) }

// DefaultParticipantID is Curator's default participant id: the address this
// host's name resolves to (Java's InetAddress.getLocalHost().getHostAddress(),
// often 127.0.1.1 or 127.0.0.1 on Debian), else the hostname itself. Every
// recipe uses it unless given WithParticipantID.
func DefaultParticipantID() string { return participant.Default() }
