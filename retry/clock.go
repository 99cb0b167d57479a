package retry

import "time"

// clock is the source of time for Do: the time package's (realClock), or a
// test's, which drives back-off sleeps by hand instead of waiting for them.
// It also satisfies backoff.Clock, so the same value measures elapsed time
// for policies such as UntilElapsed.
type clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that delivers the time on its channel once d
	// has passed.
	NewTimer(d time.Duration) timer
}

// timer is a stoppable one-shot timer created by a clock.
type timer interface {
	// C returns the channel on which the timer delivers the time when it fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether the call
	// stopped the timer, as time.Timer.Stop does.
	Stop() bool
}

// realClock is the clock of the time package, which Do uses unless a test
// says otherwise (withClock).
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }

func (t realTimer) Stop() bool { return t.t.Stop() }
