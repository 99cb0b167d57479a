package countdown

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Option configures a Countdown (New).
type Option interface{ applyCountdown(*config) }

type option func(*config)

func (f option) applyCountdown(c *config) { f(c) }

// config is what the options set; err is the first bad value given.
type config struct {
	id  []byte
	err error
}

func (c *config) bad(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: "+format, append([]any{zkrecipes.ErrInvalidArgument}, args...)...)
	}
}

// WithParticipantID sets the data of the nodes this handle makes (its
// count-downs' markers, and the latch's gen- child if it sets the count),
// to tell who counted down (default: framework.DefaultParticipantID(), as
// Curator). It must not be empty.
func WithParticipantID(id string) Option {
	return option(func(c *config) {
		if id == "" {
			c.bad("empty participant id")
		}
		c.id = []byte(id)
	})
}

// newConfig applies opts for the countdown at path.
func newConfig(path string, opts []Option) (config, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o.applyCountdown(&c)
		}
	}
	if c.err != nil {
		return c, framework.RecipeErr(recipe, path, c.err)
	}
	if c.id == nil {
		c.id = []byte(framework.DefaultParticipantID())
	}
	return c, nil
}
