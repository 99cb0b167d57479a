package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const round = "/chaos/countdown/c1-1"

// call appends one latch call of round and its answer.
func (h *hist) cd(client string, op int, call, done int64, kind, doneKind Kind, outcome string) *hist {
	h.at(call, client, kind, op, detail(round))
	return h.at(done, client, doneKind, op, detail(round), mode(outcome))
}

func countdownRound(h *hist) *hist {
	return h.cd("c1", 1, 0, 10, KindCDSet, KindCDSetDone, "set")
}

func TestCheckCountdownCleanRound(t *testing.T) {
	h := countdownRound(&hist{})
	h.cd("c1", 2, 20, 500, KindCDAwait, KindCDAwaitDone, "open")
	h.cd("c2", 1, 30, 40, KindCDCall, KindCDDone, "counted")
	h.cd("c3", 1, 50, 60, KindCDCall, KindCDDone, "unknown") // may have counted
	h.at(70, "c4", KindCDCall, 1, detail(round))             // killed in the call: no answer
	h.cd("c5", 1, 600, 610, KindCDCall, KindCDDone, "noop")
	r := CheckCountdown(*h, 3)
	assert.Empty(t, r.Violations)
	assert.Equal(t, 1, r.Countdown.RoundsOpened)
}

func TestCheckCountdownEarlyOpen(t *testing.T) {
	h := countdownRound(&hist{})
	h.cd("c1", 2, 20, 500, KindCDAwait, KindCDAwaitDone, "open")
	h.cd("c2", 1, 30, 40, KindCDCall, KindCDDone, "counted")
	h.cd("c3", 1, 50, 60, KindCDCall, KindCDDone, "error") // known not to have counted
	h.cd("c4", 1, 70, 80, KindCDCall, KindCDDone, "counted")
	h.cd("c5", 1, 600, 610, KindCDCall, KindCDDone, "counted") // after the Wait returned
	assert.Equal(t, 1, kinds(CheckCountdown(*h, 3))["early-open"])
}

func TestCheckCountdownOvercountAndFalseNoop(t *testing.T) {
	h := countdownRound(&hist{})
	for i := range 4 {
		h.cd("c2", i+1, int64(20+10*i), int64(25+10*i), KindCDCall, KindCDDone, "counted")
	}
	h.cd("c3", 1, 21, 22, KindCDCall, KindCDDone, "noop") // only one count-down could be made by then
	k := kinds(CheckCountdown(*h, 3))
	assert.Equal(t, 1, k["overcount"])
	assert.Equal(t, 1, k["false-noop"])
	assert.Equal(t, 1, k["no-progress"], "no Wait saw the round open")
}

func TestCheckCountdownNothingCountedIsNoProgress(t *testing.T) {
	h := countdownRound(&hist{})
	assert.Equal(t, 1, kinds(CheckCountdown(*h, 3))["no-progress"])
}
