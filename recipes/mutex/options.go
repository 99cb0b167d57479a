package mutex

import (
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/participant"
)

// ErrInvalidOption: an option was given a value it cannot take (an empty
// participant id).
var ErrInvalidOption = errors.New("mutex: invalid option")

// Option configures a Mutex.
type Option func(*config) error

type config struct {
	id        []byte
	revocable bool
}

// WithParticipantID sets the data of this process's lock nodes, which
// Participants reports (default: DefaultParticipantID, as Curator).
func WithParticipantID(id string) Option {
	return func(c *config) error {
		if id == "" {
			return fmt.Errorf("%w: empty participant id", ErrInvalidOption)
		}
		c.id = []byte(id)
		return nil
	}
}

// WithRevocable makes holds follow Curator's revocation requests (see Revoke
// and Hold.Revoked). It costs nothing more: every hold watches its own node
// anyway, to learn if someone else deletes it.
func WithRevocable() Option {
	return func(c *config) error { c.revocable = true; return nil }
}

func buildConfig(opts []Option) (config, error) {
	c := config{id: []byte(DefaultParticipantID())}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// DefaultParticipantID is Curator's default participant id: the address this
// host's name resolves to (Java's InetAddress.getLocalHost().getHostAddress(),
// often 127.0.1.1 or 127.0.0.1 on Debian), else the hostname itself.
func DefaultParticipantID() string { return participant.Default() }
