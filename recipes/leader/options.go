package leader

import "github.com/zkrecipes/zkrecipes/framework"

// LatchOption configures a Latch (NewLatch).
type LatchOption interface{ applyLatch(*config) }

// SelectorOption configures a Selector (NewSelector).
type SelectorOption interface{ applySelector(*config) }

// CommonOption configures a Latch and a Selector alike: it is a
// LatchOption and a SelectorOption.
type CommonOption interface {
	LatchOption
	SelectorOption
}

type commonOption func(*config)

func (f commonOption) applyLatch(c *config)    { f(c) }
func (f commonOption) applySelector(c *config) { f(c) }

type selectorOption func(*config)

func (f selectorOption) applySelector(c *config) { f(c) }

type config struct {
	framework.Settings
	autoRequeue bool
	onError     func(error)
}

// WithParticipantID sets the participant id, the data of this process's
// node (default: framework.DefaultParticipantID(), as Curator). It must not
// be empty.
func WithParticipantID(id string) CommonOption {
	return commonOption(func(c *config) { c.SetParticipantID(id) })
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
			c.Invalidf("nil error handler")
		}
		c.onError = f
	})
}
