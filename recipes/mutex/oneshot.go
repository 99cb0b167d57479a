package mutex

import (
	"context"

	"github.com/zkrecipes/zkrecipes/engine/reentrant"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// Acquire takes the mutex at path once, for code that locks per key (an
// account, an order): a Mutex made per key, used once and dropped, costs a
// Mutex's bookkeeping for nothing. It blocks until the lock is held or ctx
// ends (its deadline is the timeout), in the same FIFO queue as every
// Mutex on path and Curator's InterProcessMutex (the same nodes, fencing
// token, loss signal and errors naming the recipe and path), and returns
// the hold. The hold's Release deletes the node and leaves nothing behind:
// there is no Mutex to Close. A later Release of it returns an error
// wrapping zkrecipes.ErrReleased.
//
// It is not reentrant: no goroutine owns the hold, so it may be released
// from any goroutine, and an Acquire by its holder for the same path waits
// like anyone else's (a deadlock, unless ctx ends). Every Option of a Mutex
// applies to its hold as to a Mutex's: WithLeaseTime bounds it,
// WithRevocable follows revocation requests, WithWatcher shares a Watcher
// between many holds held at once. The client's Close ends a wait with
// zkrecipes.ErrClosed. A nil ctx or client, an invalid path or option, or a
// closed client is refused with a typed error before anything is sent.
func Acquire(ctx context.Context, client *framework.Client, path string, opts ...Option) (*hold.Hold, error) {
	cfg, err := lockConfig(client, path, opts)
	if err != nil {
		return nil, err
	}
	return reentrant.Once(ctx, client, cfg)
}
