package retry

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Policy decides how often and how long to wait between the attempts of
// one operation, as Curator's RetryPolicy. It is a small value, safe to
// share between any number of concurrent operations: build one with the
// constructors below, or Custom. The zero Policy is Default().
type Policy struct {
	// schedule returns a fresh schedule for one operation; clk measures
	// elapsed time. nil means Default.
	schedule func(clk backoff.Clock) backoff.BackOff
	// exp is set for the exponential policies, so tests can pin the jitter.
	exp *exponential
	// timed: the schedule measures the time since it was made, so Do makes
	// it before the first attempt rather than at the first failure.
	timed bool
}

func policy(f func(clk backoff.Clock) backoff.BackOff) Policy { return Policy{schedule: f} }

// backOff is the schedule of one operation under p.
func (p Policy) backOff(clk backoff.Clock) backoff.BackOff {
	if p.schedule == nil {
		return Default().schedule(clk)
	}
	return p.schedule(clk)
}

// Custom is a policy from a function, as Curator's RetryPolicy.allowRetry:
// after each retryable failure, allow is given the number of retries made
// so far (0 after the first failure) and the time since the first attempt
// began, and returns how long to sleep before the next attempt, or ok
// false to give up. A nil allow allows no retries.
func Custom(allow func(retries int, elapsed time.Duration) (sleep time.Duration, ok bool)) Policy {
	return policy(func(clk backoff.Clock) backoff.BackOff {
		if allow == nil {
			return &backoff.StopBackOff{}
		}
		clk = orSystemClock(clk)
		return &customBackOff{allow: allow, clk: clk, start: clk.Now()}
	}).withTimed()
}

func (p Policy) withTimed() Policy { p.timed = true; return p }

type customBackOff struct {
	allow   func(int, time.Duration) (time.Duration, bool)
	clk     backoff.Clock
	start   time.Time
	retries int
}

func (b *customBackOff) NextBackOff() time.Duration {
	d, ok := b.allow(b.retries, b.clk.Now().Sub(b.start))
	if !ok {
		return backoff.Stop
	}
	b.retries++
	return max(d, 0)
}

func (b *customBackOff) Reset() { b.retries, b.start = 0, b.clk.Now() }

// MaxExponentialRetries caps the retries of [Exponential] and
// [BoundedExponential]. It is Curator's MAX_RETRIES_LIMIT: past it the jitter
// range 2^(retry+1) no longer fits a Java int, and even with the smallest base
// the later sleeps would be measured in days.
const MaxExponentialRetries = 29

// Default returns the policy used when none is given:
// BoundedExponential(100ms, 5s, 10). In the worst case it waits about 31s in
// total over its ten retries, long enough to ride out a leader election or a
// client reconnect, short enough not to hide a dead ensemble for minutes.
func Default() Policy {
	return BoundedExponential(100*time.Millisecond, 5*time.Second, 10)
}

// Exponential mirrors Curator's ExponentialBackoffRetry: retry i (counting
// from 0) sleeps base * k, k drawn uniformly from [1, 2^(i+1)), so the range
// doubles each time while the jitter keeps clients that lost the same server
// from reconnecting in lockstep. maxRetries above [MaxExponentialRetries] is
// lowered to it; a negative maxRetries or base counts as 0.
func Exponential(base time.Duration, maxRetries int) Policy {
	return BoundedExponential(base, math.MaxInt64, maxRetries)
}

// BoundedExponential is [Exponential] with every sleep capped at max, as
// Curator's BoundedExponentialBackoffRetry. A base above max just means every
// sleep is max. Negative durations and counts count as 0.
func BoundedExponential(base, max time.Duration, maxRetries int) Policy {
	return (&exponential{
		base:       nonNegative(base),
		max:        nonNegative(max),
		maxRetries: min(MaxExponentialRetries, nonNegative(maxRetries)),
	}).policy()
}

// NTimes retries up to n times, sleeping sleep before each retry, as Curator's
// RetryNTimes. Negative values count as 0.
func NTimes(n int, sleep time.Duration) Policy {
	n, sleep = nonNegative(n), nonNegative(sleep)
	return policy(func(backoff.Clock) backoff.BackOff {
		return backoff.WithMaxRetries(backoff.NewConstantBackOff(sleep), uint64(n))
	})
}

// OneTime retries once after sleep, as Curator's RetryOneTime. A negative
// sleep counts as 0.
func OneTime(sleep time.Duration) Policy { return NTimes(1, sleep) }

// UntilElapsed retries with a fixed sleep for as long as the time elapsed
// since the first attempt plus the next sleep stays within maxElapsed, as
// Curator's RetryUntilElapsed. Elapsed time comes from the clock handed to
// NewBackOff, and includes the time spent inside the operation itself.
// Negative durations count as 0, and a zero maxElapsed allows no retries.
func UntilElapsed(maxElapsed, sleep time.Duration) Policy {
	maxElapsed, sleep = nonNegative(maxElapsed), nonNegative(sleep)
	return policy(func(clk backoff.Clock) backoff.BackOff {
		if maxElapsed == 0 {
			// ExponentialBackOff reads a zero MaxElapsedTime as "no limit".
			return &backoff.StopBackOff{}
		}
		// A multiplier of 1 and no randomisation turn ExponentialBackOff into
		// a constant schedule that still does the elapsed-time bookkeeping.
		return backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(sleep),
			backoff.WithMaxInterval(sleep),
			backoff.WithMultiplier(1),
			backoff.WithRandomizationFactor(0),
			backoff.WithMaxElapsedTime(maxElapsed),
			backoff.WithClockProvider(orSystemClock(clk)),
		)
	}).withTimed()
}

// Forever retries without limit, sleeping sleep before each retry, as
// Curator's RetryForever. Only the context passed to [Do] ends it, so use it
// with a context that can be cancelled. A negative sleep counts as 0.
func Forever(sleep time.Duration) Policy {
	sleep = nonNegative(sleep)
	return policy(func(backoff.Clock) backoff.BackOff {
		return backoff.NewConstantBackOff(sleep)
	})
}

// Never allows no retries: the first failure is final. It keeps tests that
// expect an error from sitting through a back-off schedule.
func Never() Policy {
	return policy(func(backoff.Clock) backoff.BackOff { return &backoff.StopBackOff{} })
}

// exponential is not built on backoff.ExponentialBackOff because that type
// jitters by a factor around a growing interval rather than drawing Curator's
// [1, 2^(i+1)) multiplier, and it reads the global math/rand, which tests
// cannot pin down.
type exponential struct {
	base, max  time.Duration
	maxRetries int
	// intN returns a value in [0, n); nil means math/rand/v2.IntN. Tests set
	// it to get a predictable schedule.
	intN func(n int) int
}

func (p *exponential) policy() Policy {
	return Policy{schedule: func(backoff.Clock) backoff.BackOff { return &exponentialBackOff{policy: p} }, exp: p}
}

type exponentialBackOff struct {
	policy  *exponential
	retries int
}

func (b *exponentialBackOff) NextBackOff() time.Duration {
	p := b.policy
	if b.retries >= p.maxRetries {
		return backoff.Stop
	}
	intN := p.intN
	if intN == nil {
		intN = rand.IntN
	}
	// max(1, …) rather than 1+IntN(n-1) to keep Curator's distribution, in
	// which the smallest sleep is twice as likely as any other.
	k := int64(max(1, intN(1<<(b.retries+1))))
	b.retries++
	// Compare by division: base*k itself can overflow for large bases.
	if p.base != 0 && k > int64(p.max/p.base) {
		return p.max
	}
	return p.base * time.Duration(k)
}

func (b *exponentialBackOff) Reset() { b.retries = 0 }

func nonNegative[T int | time.Duration](v T) T { return max(v, 0) }

func orSystemClock(clk backoff.Clock) backoff.Clock {
	if clk == nil {
		return backoff.SystemClock
	}
	return clk
}
