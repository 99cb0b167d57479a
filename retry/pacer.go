package retry

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// floorPause is the pause of a Pacer whose policy allows no retry at all:
// a loop that never gives up must still not spin.
const floorPause = 100 * time.Millisecond

// Pacer spaces the attempts of a loop that never gives up, as a recipe's
// background loop that follows a node until Close: each Wait sleeps the
// policy's next pause, and Reset, after an attempt that succeeded, starts
// the schedule over. Where Do would give up because the policy allows no
// more retries, a Pacer keeps pausing for the last pause the policy gave
// (for a policy that gave none, 100ms). A Pacer is for one loop on one
// goroutine; make one with Policy.Pacer.
type Pacer struct {
	p    Policy
	clk  clock
	b    backoff.BackOff
	last time.Duration
}

// Pacer returns a Pacer whose pauses follow p.
func (p Policy) Pacer() *Pacer { return &Pacer{p: p, clk: realClock{}} }

// Next returns the pause before the next attempt, and advances the
// schedule.
func (pc *Pacer) Next() time.Duration {
	if pc.b == nil {
		pc.b = pc.p.backOff(pc.clk)
	}
	d := pc.b.NextBackOff()
	if d == backoff.Stop {
		if pc.last <= 0 {
			pc.last = floorPause
		}
		return pc.last
	}
	pc.last = max(d, 0)
	return pc.last
}

// Wait sleeps the next pause and reports true, or returns false as soon as
// ctx ends. A nil ctx counts as ended: Wait returns false at once.
func (pc *Pacer) Wait(ctx context.Context) bool {
	if ctx == nil {
		return false
	}
	return sleep(ctx, pc.clk, pc.Next())
}

// Reset starts the schedule over: the next pause is the policy's first.
func (pc *Pacer) Reset() { pc.b, pc.last = nil, 0 }
