package leader

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
)

// LatchOption configures a Latch (NewLatch).
type LatchOption interface{ applyLatch(*config) }

// SelectorOption configures a Selector (NewSelector).
type SelectorOption interface{ applySelector(*config) }

// CommonOption configures a Latch and a Selector alike: it is a
// LatchOption and a SelectorOption.
type CommonOption struct{ f func(*config) }

func (o CommonOption) applyLatch(c *config)    { o.f(c) }
func (o CommonOption) applySelector(c *config) { o.f(c) }

type selectorOption func(*config)

func (f selectorOption) applySelector(c *config) { f(c) }

type config struct {
	id          string
	autoRequeue bool
	onError     func(error)
	err         error
}

func (c *config) bad(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: "+format, append([]any{zkrecipes.ErrInvalidArgument}, args...)...)
	}
}

// WithParticipantID sets the participant id, the data of this process's
// node (default: framework.DefaultParticipantID(), as Curator). It must not
// be empty.
func WithParticipantID(id string) CommonOption {
	return CommonOption{func(c *config) {
		if id == "" {
			c.bad("empty participant id")
		}
		c.id = id
	}}
}

// WithAutoRequeue makes a Selector compete again each time its Func
// returns, as Curator's autoRequeue.
func WithAutoRequeue() SelectorOption {
	return selectorOption(func(c *config) { c.autoRequeue = true })
}

// WithErrorHandler receives a Selector's Func errors and panics (wrapped
// in ErrPanic). By default they are logged through the client's logger. f
// must not be nil.
func WithErrorHandler(f func(error)) SelectorOption {
	return selectorOption(func(c *config) {
		if f == nil {
			c.bad("nil error handler")
		}
		c.onError = f
	})
}

// newConfig applies opts for recipe at path.
func newConfig[O any](recipe, path string, opts []O, apply func(O, *config)) (config, error) {
	var c config
	for _, o := range opts {
		if any(o) != nil {
			apply(o, &c)
		}
	}
	if c.err != nil {
		return c, framework.RecipeErr(recipe, path, c.err)
	}
	if c.id == "" {
		c.id = framework.DefaultParticipantID()
	}
	return c, nil
}
