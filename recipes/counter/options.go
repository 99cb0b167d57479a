package counter

import (
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Option configures a Long, an Integer or a Bytes (NewLong, NewInteger,
// NewBytes): every option of the package applies to all three.
type Option interface{ applyCounter(*config) }

type option func(*config)

func (f option) applyCounter(c *config) { f(c) }

type config struct {
	framework.Settings
	retry *retry.Policy
	promo *promotion
}

// promotion is Curator's PromotedToLock: the mutex a counter takes when
// its optimistic tries are used up, how long it waits for it, and the
// policy of its tries under it.
type promotion struct {
	path    string
	timeout time.Duration
	retry   retry.Policy
}

// WithOptimisticRetry sets how often, and after what sleeps, an operation
// tries its compare-and-set again after losing to another writer, before
// it is promoted to the lock (WithPromotedToLock) or gives up: Curator's
// RetryPolicy argument (default: retry.Default()). It is not the client's
// retry of a request (framework.WithRetryPolicy): a compare-and-set that
// lost was answered, and is tried again with the value read anew.
func WithOptimisticRetry(p retry.Policy) Option {
	return option(func(c *config) { c.retry = &p })
}

// WithPromotedToLock is Curator's PromotedToLock: once the optimistic
// tries are used up, take the mutex at lockPath (recipes/mutex, Curator's
// InterProcessMutex, so Java clients promoted to the same path queue with
// it), waiting at most timeout for it, and try again under it as policy
// allows, each write fenced by the hold. lockPath must be a valid path,
// not the root and not the counter's own path (the counter is a plain
// node, the lock a directory); timeout must be positive.
func WithPromotedToLock(lockPath string, timeout time.Duration, policy retry.Policy) Option {
	return option(func(c *config) {
		if err := framework.ValidateRecipePath(lockPath); err != nil {
			c.Invalidf("promoted lock path: %w", err)
		}
		if timeout <= 0 {
			c.Invalidf("promoted lock timeout %v is not positive", timeout)
		}
		c.promo = &promotion{path: lockPath, timeout: timeout, retry: policy}
	})
}

// WithParticipantID sets the data of the promoted mutex's nodes (default:
// framework.DefaultParticipantID(), as Curator). It must not be empty.
// Without WithPromotedToLock it has no use.
func WithParticipantID(id string) Option {
	return option(func(c *config) { c.SetParticipantID(id) })
}
