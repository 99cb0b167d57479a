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

type config struct{ framework.Settings }

// WithParticipantID sets the data of the nodes this process makes
// (default: framework.DefaultParticipantID(), the local address, as
// Curator). It must not be empty.
func WithParticipantID(id string) Option {
	return option(func(c *config) { c.SetParticipantID(id) })
}

// participantID applies opts for recipe at path and returns the
// participant id; check is the recipe's check of its largest write that
// carries it (a request the server would refuse is refused now, not on
// every call).
func participantID(recipe, path string, opts []Option, check func(id []byte) error) (string, error) {
	cfg, err := framework.Configure(recipe, path, config{}, opts, Option.applyBarrier)
	if err != nil {
		return "", err
	}
	id := cfg.ParticipantID()
	if err := check([]byte(id)); err != nil {
		return "", framework.RecipeErr(recipe, path, fmt.Errorf("%w: participant id of %d bytes: %w", zkrecipes.ErrInvalidArgument, len(id), err))
	}
	return id, nil
}
