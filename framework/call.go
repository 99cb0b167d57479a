package framework

import (
	"context"
	"errors"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/retry"
)

// do runs op on the current go-zookeeper client under the retry policy.
func (c *Client) do(ctx context.Context, name, path string, op func(z *zk.Conn) error) error {
	_, err := doValue(c, ctx, name, path, func(z *zk.Conn) (struct{}, error) { return struct{}{}, op(z) })
	return err
}

// doValue is do for an operation with a result.
func doValue[T any](c *Client, ctx context.Context, name, path string, op func(z *zk.Conn) (T, error)) (T, error) {
	return doSized(c, ctx, name, path, 0, op)
}

// doSized is doValue for a write whose request is size bytes: one over
// ZooKeeper's default limit is sent at most once (see sentOnce), and an
// error that leaves its outcome unknown says so (see unanswered).
func doSized[T any](c *Client, ctx context.Context, name, path string, size int, op func(z *zk.Conn) (T, error)) (T, error) {
	var out T
	if c.closed.Load() {
		return out, opErr(name, path, zkrecipes.ErrClosed)
	}
	if err := ctx.Err(); err != nil && size > DefaultMaxRequestSize {
		return out, opErr(name, path, err) // unsent: not an unknown outcome
	}
	out, err := measured(c, ctx, name, op, sentOnce(size))
	return out, opErr(name, path, unanswered(size, c.closedErr(err)))
}

// measured runs op under the client's retry policy (with opts), each
// attempt timed into the client's request metrics under name: the one loop
// of every request the client retries, whether it may resend it (doSized)
// or sends it at most once (sendOnce).
func measured[T any](c *Client, ctx context.Context, name string, op func(z *zk.Conn) (T, error), opts ...retry.Option) (T, error) {
	var out T
	mop, measure := metrics.OpNamed(name)
	err := retry.Do(ctx, c.retry, func(ctx context.Context) error {
		start := time.Now()
		v, err := callValue(c, ctx, func() (T, error) { return op(c.zk()) })
		if measure {
			c.metrics.Request(ctx, mop, time.Since(start), err)
		}
		if err == nil {
			out = v
		}
		return err
	}, opts...)
	return out, err
}

// callValue runs f, a blocking go-zookeeper call, and returns early if ctx
// ends (but see inlineSafe for a ctx without a deadline). f then finishes
// in the background: go-zookeeper has no cancellation, but every request
// ends with an answer, a connection error, or Close. Results come back
// through a channel, so an abandoned call can never write into its
// caller's variables.
func callValue[T any](c *Client, ctx context.Context, f func() (T, error)) (T, error) {
	return callTracked(c, ctx, nil, f)
}

// callTracked is callValue that counts f in inflight until f returns, so a
// caller that gave up on it can still learn when it is over.
//
// On a link that is up, under a ctx with no deadline that is not a
// recipe's own, f runs on the caller's goroutine (see inlineSafe): a
// request that is answered within a round trip costs no hand-off to a
// worker, and a ctx that ends meanwhile is noticed when f returns, its
// result then dropped as an abandoned call's would be.
func callTracked[T any](c *Client, ctx context.Context, inflight *sync.WaitGroup, f func() (T, error)) (T, error) {
	var zero T
	if ctx.Done() == nil {
		return f()
	}
	if ctx == c.life {
		// Only Close ends the client's life, and Close waits for every
		// call it spawned to return anyway: a goroutine to abandon f on
		// would cost each background request (a listing, a release's
		// delete) a goroutine and buy nothing.
		if inflight != nil {
			inflight.Add(1)
			defer inflight.Done()
		}
		return f()
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if c.inlineSafe(ctx) {
		return callInline(ctx, inflight, f)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	if inflight != nil {
		inflight.Add(1)
	}
	if !c.Go(func() {
		if inflight != nil {
			defer inflight.Done()
		}
		// The caller's profiler labels (pprof.Do), as a goroutine of its
		// own would have inherited them.
		pprof.SetGoroutineLabels(ctx)
		v, err := f()
		done <- result{v, err}
	}) {
		if inflight != nil {
			inflight.Done()
		}
		return zero, zkrecipes.ErrClosed
	}
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// inlineSafe says whether a call under ctx may run on its caller's
// goroutine, ctx being checked before and after rather than raced: the
// session's link is up, ctx has no deadline, and ctx is not marked by
// HandOff. A cancel while such a call is in flight is noticed
// when the call returns: within a round trip on a live link, and within
// go-zookeeper's own timeouts when the link dies (see the package doc; a
// request still queued when it dies waits for the reconnect to try every
// server, which a hung server that accepts connections stretches to ten
// receive timeouts). A deadline always keeps the hand-off, so that the
// caller returns the moment it passes whatever go-zookeeper waits for: a
// deadline is a bound the caller was promised, a cancel is a request to
// stop.
func (c *Client) inlineSafe(ctx context.Context) bool {
	s := c.conn.Session()
	if s.ID == 0 || closed(s.Suspended) {
		return false
	}
	if _, hasDeadline := ctx.Deadline(); hasDeadline {
		return false
	}
	return ctx.Value(handOffKey{}) == nil
}

// handOffKey marks a context made by HandOff.
type handOffKey struct{}

// HandOff returns parent marked so that every request under it, or under
// a context derived from it, hands off to a worker of the client, and
// returns the moment the context ends, as a request under a deadline
// does; an unmarked context with no deadline may run its request on the
// caller's goroutine and notice its cancel only when the request returns
// (see the package doc). Mark the context of work that is cancelled and
// then waited for: a Runtime's background work and Start, a followed
// node's watchers. A recipe of your own marks its own the same way, so
// that its Close is not held up by a request on a dead link.
func HandOff(parent context.Context) context.Context {
	return context.WithValue(parent, handOffKey{}, true)
}

// callInline runs f on the caller's goroutine, counted in inflight (if not
// nil), and reports ctx's error instead of f's result if ctx ended while
// f ran: the caller sees what it would have seen had it stopped waiting
// the moment ctx ended (the same outcome as the hand-off's, later).
func callInline[T any](ctx context.Context, inflight *sync.WaitGroup, f func() (T, error)) (T, error) {
	if inflight != nil {
		inflight.Add(1)
	}
	v, err := f()
	if inflight != nil {
		inflight.Done()
	}
	if cerr := ctx.Err(); cerr != nil {
		var zero T
		return zero, cerr
	}
	return v, err
}

func (c *Client) closedErr(err error) error {
	if err != nil && c.closed.Load() && errors.Is(err, zk.ErrClosing) {
		return errors.Join(zkrecipes.ErrClosed, err)
	}
	return err
}
