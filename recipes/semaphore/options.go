package semaphore

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/internal/participant"
)

// Option configures a Semaphore.
type Option func(*config) error

type config struct {
	id []byte
}

// WithParticipantID sets the data of this process's lease nodes, which
// Participants reports (default: DefaultParticipantID, as Curator).
func WithParticipantID(id string) Option {
	return func(c *config) error {
		if id == "" {
			return errors.New("semaphore: empty participant id")
		}
		c.id = []byte(id)
		return nil
	}
}

func buildConfig(opts []Option) (config, error) {
	var c config
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return c, err
		}
	}
	if c.id == nil {
		c.id = []byte(DefaultParticipantID())
	}
	return c, nil
}

// DefaultParticipantID is Curator's default node data: the address this
// host's name resolves to (Java's InetAddress.getLocalHost().getHostAddress()),
// else the hostname itself. It is mutex.DefaultParticipantID too.
func DefaultParticipantID() string { return participant.Default() }
