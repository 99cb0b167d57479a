package retry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPacerFollowsThePolicyThenKeepsItsLastPause(t *testing.T) {
	pc := NTimes(2, 30*time.Millisecond).Pacer()
	got := []time.Duration{pc.Next(), pc.Next(), pc.Next(), pc.Next()}
	assert.Equal(t, []time.Duration{30 * time.Millisecond, 30 * time.Millisecond, 30 * time.Millisecond, 30 * time.Millisecond}, got)
}

func TestPacerResetStartsTheScheduleOver(t *testing.T) {
	pc := Custom(func(retries int, _ time.Duration) (time.Duration, bool) {
		return time.Duration(retries+1) * time.Millisecond, retries < 3
	}).Pacer()
	assert.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 3 * time.Millisecond},
		[]time.Duration{pc.Next(), pc.Next(), pc.Next(), pc.Next()})
	pc.Reset()
	assert.Equal(t, time.Millisecond, pc.Next(), "the schedule starts over after Reset")
}

func TestPacerOfAPolicyWithoutRetriesDoesNotSpin(t *testing.T) {
	pc := NTimes(0, 0).Pacer()
	assert.Equal(t, floorPause, pc.Next())
	assert.Equal(t, floorPause, pc.Next())
}

func TestPacerWaitEndsWithItsContext(t *testing.T) {
	clk := newFakeClock()
	pc := NTimes(1, time.Hour).Pacer()
	pc.clk = clk
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, pc.Wait(ctx), "a done context ends the wait at once")
}

func TestPacerWaitSleepsThePause(t *testing.T) {
	clk := newAutoClock()
	pc := NTimes(3, 20*time.Millisecond).Pacer()
	pc.clk = clk
	assert.True(t, pc.Wait(context.Background()))
	assert.Equal(t, []time.Duration{20 * time.Millisecond}, clk.Sleeps())
}
