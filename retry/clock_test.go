package retry

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withClock makes Do read time and sleep through c rather than the time
// package, so that tests control the sleeps. The policy measures elapsed
// time with the same clock. A nil c is ignored.
func withClock(c clock) Option {
	return option(func(cfg *config) {
		if c != nil {
			cfg.clock = c
		}
	})
}

// fakeClock is a manual clock: time moves only through Advance (or, in auto
// mode, when a timer is created), and moving it fires the timers that fall due.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	sleeps []time.Duration
	// auto makes NewTimer advance the clock to the timer's deadline, so that
	// Do can run on the test goroutine and still sleep.
	auto bool
	// created, when set, receives every new timer, so that a test running Do
	// on another goroutine knows when Do has started to sleep.
	created chan *fakeTimer
}

type fakeTimer struct {
	clock   *fakeClock
	when    time.Time
	ch      chan time.Time
	fired   bool
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func newAutoClock() *fakeClock {
	c := newFakeClock()
	c.auto = true
	return c
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) timer {
	c.mu.Lock()
	t := &fakeTimer{clock: c, when: c.now.Add(d), ch: make(chan time.Time, 1)}
	c.timers = append(c.timers, t)
	c.sleeps = append(c.sleeps, d)
	if c.auto {
		c.advanceLocked(d)
	} else {
		c.fireLocked()
	}
	created := c.created
	c.mu.Unlock()
	if created != nil {
		created <- t
	}
	return t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advanceLocked(d)
}

func (c *fakeClock) advanceLocked(d time.Duration) {
	c.now = c.now.Add(d)
	c.fireLocked()
}

func (c *fakeClock) fireLocked() {
	for _, t := range c.timers {
		if !t.fired && !t.stopped && !t.when.After(c.now) {
			t.fired = true
			t.ch <- c.now
		}
	}
}

// Sleeps returns the durations of all timers created so far.
func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	active := !t.fired && !t.stopped
	t.stopped = true
	return active
}

func (t *fakeTimer) Stopped() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.stopped
}

func TestFakeClockFiresOnlyWhenDue(t *testing.T) {
	c := newFakeClock()
	tm := c.NewTimer(time.Second)
	c.Advance(999 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("timer fired early")
	default:
	}
	c.Advance(time.Millisecond)
	select {
	case <-tm.C():
	default:
		t.Fatal("timer did not fire when due")
	}
	assert.False(t, tm.Stop(), "Stop after firing")
}

func TestRealClock(t *testing.T) {
	c := realClock{}
	assert.WithinDuration(t, time.Now(), c.Now(), time.Minute)

	tm := c.NewTimer(time.Hour)
	assert.True(t, tm.Stop(), "an hour-long timer is still pending")

	tm = c.NewTimer(0)
	_, ok := <-tm.C()
	require.True(t, ok)
	assert.False(t, tm.Stop(), "Stop after firing")
}
