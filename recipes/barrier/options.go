package barrier

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Option configures a Barrier or a DoubleBarrier (New, NewDouble): every
// option of the package applies to both.
type Option interface{ applyBarrier(*config) }

type option func(*config)

func (f option) applyBarrier(c *config) { f(c) }

// config is what the options set; err is the first bad value given.
type config struct {
	id  string
	err error
}

// WithParticipantID sets the data of the nodes this process makes
// (default: framework.DefaultParticipantID(), the local address, as
// Curator). It must not be empty.
func WithParticipantID(id string) Option {
	return option(func(c *config) {
		if id == "" && c.err == nil {
			c.err = fmt.Errorf("%w: empty participant id", zkrecipes.ErrInvalidArgument)
		}
		c.id = id
	})
}

// newConfig applies opts; check is the recipe's check of its largest write
// that carries the participant id (a request the server would refuse is
// refused now, not on every call).
func newConfig(opts []Option, check func(id []byte) error) (config, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o.applyBarrier(&c)
		}
	}
	if c.err != nil {
		return c, c.err
	}
	if c.id == "" {
		c.id = framework.DefaultParticipantID()
	}
	if err := check([]byte(c.id)); err != nil {
		return c, fmt.Errorf("%w: participant id of %d bytes: %w", zkrecipes.ErrInvalidArgument, len(c.id), err)
	}
	return c, nil
}
