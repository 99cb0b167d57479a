package framework

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes"
)

// Settings is the part every recipe's settings share: the participant id
// (the data of the nodes a recipe makes) and the first bad value its
// options were given. A recipe's settings are a struct that embeds
// Settings, and its options are an interface of its own with an
// unexported method that sets them, so that an option of another recipe
// does not compile; Configure reads them. Go cannot make one function an
// option of several packages' interfaces, so each recipe package declares
// its own WithParticipantID, each a call of SetParticipantID:
//
//	type config struct {
//		framework.Settings
//		lease time.Duration
//	}
//
//	// Option configures a Fence (New).
//	type Option interface{ applyFence(*config) }
//
//	type option func(*config)
//
//	func (f option) applyFence(c *config) { f(c) }
//
//	// WithParticipantID sets the data of the fence's nodes.
//	func WithParticipantID(id string) Option {
//		return option(func(c *config) { c.SetParticipantID(id) })
//	}
//
// The zero Settings has no participant id set and no bad value.
type Settings struct {
	id  string
	err error
}

// SetParticipantID sets the participant id, the data of the nodes the
// recipe makes; the last one given wins. An empty id is a bad value.
func (s *Settings) SetParticipantID(id string) {
	if id == "" {
		s.Invalidf("empty participant id")
	}
	s.id = id
}

// ParticipantID returns the participant id set, or by default
// DefaultParticipantID(), as Curator. The default is worked out only when
// read, so that a recipe that writes no participant id never resolves the
// host's name.
func (s *Settings) ParticipantID() string {
	if s.id == "" {
		return DefaultParticipantID()
	}
	return s.id
}

// Invalidf records a bad value, formatted as fmt.Errorf (%w included)
// after zkrecipes.ErrInvalidArgument, as "invalid argument: lease time -1s
// is not positive". Only the first one is kept: it is what Err returns.
func (s *Settings) Invalidf(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: "+format, append([]any{zkrecipes.ErrInvalidArgument}, args...)...)
	}
}

// Err returns the first bad value recorded (Invalidf, SetParticipantID),
// or nil. It names neither recipe nor path: Configure's error does.
func (s *Settings) Err() error { return s.err }

func (s *Settings) settings() *Settings { return s }

// Configurable is a pointer to a recipe's settings: a struct that embeds
// Settings (the method is unexported: embedding is the only way to have
// it).
type Configurable interface{ settings() *Settings }

// Configure applies a recipe's options, in order, to defaults (the
// recipe's own defaults; the participant id's is DefaultParticipantID(),
// see Settings.ParticipantID) and returns the settings. A nil option (a
// nil interface value) is skipped. apply is the option interface's
// method, as in the recipe's constructor:
//
//	cfg, err := framework.Configure("fence", path, config{lease: time.Minute}, opts, Option.applyFence)
//
// A bad value makes the error: the first one given, wrapping
// zkrecipes.ErrInvalidArgument, in a *RecipeError naming recipe and path
// (RecipeErr); the settings returned then still hold it (Settings.Err).
func Configure[C any, O any, P interface {
	*C
	Configurable
}](recipe, path string, defaults C, opts []O, apply func(O, P)) (C, error) {
	if len(opts) == 0 {
		// No option: nothing to check (the defaults are valid), and no
		// copy moved to the heap for apply, which a lock made per key
		// would pay for each time.
		return defaults, nil
	}
	c := defaults
	for _, o := range opts {
		if any(o) != nil {
			apply(o, P(&c))
		}
	}
	return c, RecipeErr(recipe, path, P(&c).settings().err)
}
