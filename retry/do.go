package retry

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/zkrecipes/zkrecipes"
)

// Option adjusts one call of Do. It has the module's one option shape (see
// framework.Option).
type Option interface{ applyDo(*config) }

type option func(*config)

func (f option) applyDo(c *config) { f(c) }

type config struct {
	clock     clock
	notify    func(err error, attempt int, next time.Duration)
	retryable func(error) bool
}

// WithNotify has [Do] call f before each sleep with the error that caused the
// retry, the number of attempts made so far (1 for the first failure) and the
// sleep about to start, typically to log it. f runs on the goroutine of Do, so
// it should not block.
func WithNotify(f func(err error, attempt int, next time.Duration)) Option {
	return option(func(cfg *config) { cfg.notify = f })
}

// WithRetryable replaces [Retryable] as the test of which errors [Do] retries,
// for operations whose own errors are also transient. A nil f is ignored.
func WithRetryable(f func(error) bool) Option {
	return option(func(cfg *config) {
		if f != nil {
			cfg.retryable = f
		}
	})
}

// Do runs op until it succeeds, fails with an error that is not retryable, or
// the policy p stops allowing retries; it is Curator's RetryLoop. The zero p
// means [Default]().
//
// The error returned is
//
//   - nil once op succeeds;
//   - the error of op itself, untouched, if it is not retryable;
//   - an [*ExhaustedError] wrapping the last error of op if p allows no more
//     retries;
//   - an [*InterruptedError] if ctx ends while Do sleeps between attempts; Do
//     returns at once rather than finishing the sleep;
//   - ctx.Err(), without op being called, if ctx is already done;
//   - an error matching zkrecipes.ErrInvalidArgument, without op being
//     called, if ctx is nil.
//
// Do does not interrupt op itself: op receives ctx and is expected to honour
// it.
func Do(ctx context.Context, p Policy, op func(ctx context.Context) error, opts ...Option) error {
	if ctx == nil {
		return fmt.Errorf("retry: %w", zkrecipes.ErrNilContext)
	}
	cfg := doConfig(opts)
	if err := ctx.Err(); err != nil {
		return err
	}
	// A policy that measures elapsed time gets its schedule before the
	// first attempt, so that it counts the time spent in op as well as in
	// sleeps; the others get theirs at the first failure: most calls never
	// fail, and the schedule is an allocation on every request.
	var b backoff.BackOff
	if p.timed {
		b = p.backOff(cfg.clock)
	}
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil || !cfg.retryable(err) {
			return err
		}
		if b == nil {
			b = p.backOff(cfg.clock)
		}
		next := b.NextBackOff()
		if next == backoff.Stop {
			return &ExhaustedError{Attempts: attempt, Err: err}
		}
		// Other negative values come only from a faulty BackOff; treat them as
		// "retry now" rather than giving up on a working operation.
		next = max(next, 0)
		if cfg.notify != nil {
			cfg.notify(err, attempt, next)
		}
		if !sleep(ctx, cfg.clock, next) {
			return &InterruptedError{Attempts: attempt, CtxErr: ctx.Err(), Err: err, cause: context.Cause(ctx)}
		}
	}
}

// doConfig is Do's configuration under opts. Built here and returned by
// value, it stays off the heap when opts is empty or all nil, as on every
// request the framework sends.
func doConfig(opts []Option) config {
	if !slices.ContainsFunc(opts, func(o Option) bool { return o != nil }) {
		return config{clock: realClock{}, retryable: Retryable}
	}
	cfg := &config{clock: realClock{}, retryable: Retryable}
	for _, opt := range opts {
		if opt != nil {
			opt.applyDo(cfg)
		}
	}
	return *cfg
}

// sleep waits for d and reports whether it did so before ctx ended.
func sleep(ctx context.Context, clk clock, d time.Duration) bool {
	// Checked up front because a select with both cases ready picks one at
	// random, and because a zero sleep needs no timer at all.
	if ctx.Err() != nil {
		return false
	}
	if d == 0 {
		return true
	}
	t := clk.NewTimer(d)
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}

// ExhaustedError is returned by [Do] when the policy allows no further
// attempt. errors.Is and errors.As see through it to the last error of the
// operation.
type ExhaustedError struct {
	// Attempts is how many times the operation ran.
	Attempts int
	// Err is the error of the last attempt.
	Err error
}

// Error names the number of attempts along with the last error.
func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("retry: gave up after %s: %v", attempts(e.Attempts), e.Err)
}

// Unwrap returns the error of the last attempt.
func (e *ExhaustedError) Unwrap() error { return e.Err }

// Retryable reports false, so that a [Do] around another Do does not multiply
// the attempts of the inner one.
func (e *ExhaustedError) Retryable() bool { return false }

// InterruptedError is returned by [Do] when its context ends during a sleep
// between attempts. errors.Is matches both the context's error and the last
// error of the operation, so callers can test for either.
type InterruptedError struct {
	// Attempts is how many times the operation ran.
	Attempts int
	// CtxErr is ctx.Err() at the time Do gave up.
	CtxErr error
	// Err is the error of the last attempt.
	Err error

	cause error // context.Cause, kept when it says more than CtxErr
}

// Error names the context's error, the number of attempts and the last error.
func (e *InterruptedError) Error() string {
	reason := e.CtxErr.Error()
	if e.cause != nil && e.cause != e.CtxErr {
		reason += " (" + e.cause.Error() + ")"
	}
	return fmt.Sprintf("retry: %s after %s: %v", reason, attempts(e.Attempts), e.Err)
}

// Unwrap returns the context's error, its cause if different, and the error
// of the last attempt.
func (e *InterruptedError) Unwrap() []error {
	if e.cause != nil && e.cause != e.CtxErr {
		return []error{e.CtxErr, e.cause, e.Err}
	}
	return []error{e.CtxErr, e.Err}
}

// Retryable reports false: the caller's context has ended, so no enclosing
// loop should try again.
func (e *InterruptedError) Retryable() bool { return false }

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}
