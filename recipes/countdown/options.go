package countdown

import "github.com/zkrecipes/zkrecipes/framework"

// Option configures a Countdown (New).
type Option interface{ applyCountdown(*config) }

type option func(*config)

func (f option) applyCountdown(c *config) { f(c) }

type config struct{ framework.Settings }

// WithParticipantID sets the data of the nodes this handle makes (its
// count-downs' markers, and the latch's gen- child if it sets the count),
// to tell who counted down (default: framework.DefaultParticipantID(), as
// Curator). It must not be empty.
func WithParticipantID(id string) Option {
	return option(func(c *config) { c.SetParticipantID(id) })
}
