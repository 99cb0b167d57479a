package retry

import "time"

// Clock is the source of time for [Do]. It exists so that tests can drive
// back-off sleeps by hand instead of waiting for them; production code uses
// [RealClock]. Clock also satisfies backoff.Clock, so the same value measures
// elapsed time for policies such as [UntilElapsed].
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that delivers the time on its channel once d
	// has passed.
	NewTimer(d time.Duration) Timer
}

// Timer is a stoppable one-shot timer created by a [Clock].
type Timer interface {
	// C returns the channel on which the timer delivers the time when it fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether the call
	// stopped the timer, as time.Timer.Stop does.
	Stop() bool
}

// RealClock returns the Clock backed by the time package; [Do] uses it unless
// [WithClock] says otherwise.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }

func (t realTimer) Stop() bool { return t.t.Stop() }
