package chaos

import (
	"fmt"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
)

// counterHist builds an atomic run's history; times are milliseconds.
type counterHist []Event

func (h *counterHist) call(ms int64, client string, op int, mode, detail string) *counterHist {
	*h = append(*h, Event{T: 1e12 + ms*1e6, Client: client, Kind: KindCounterCall, Op: op, Mode: mode, Detail: detail})
	return h
}

func (h *counterHist) ret(ms int64, client string, op int, mode, outcome string, pre, post int64) *counterHist {
	*h = append(*h, Event{T: 1e12 + ms*1e6, Client: client, Kind: KindCounterReturn, Op: op, Mode: mode,
		Accepted: outcome == "ok", Detail: fmt.Sprintf("%s %d %d", outcome, pre, post)})
	return h
}

func (h *counterHist) kill(ms int64, client string) *counterHist {
	*h = append(*h, Event{T: 1e12 + ms*1e6, Client: client, Kind: KindKill})
	return h
}

func checkCounterHist(h counterHist, final int64) *Report {
	return checkAtomic(h, final, 1e12+1e9)
}

// Two adds that both succeeded, then one whose reply was lost.
func lostReply() *counterHist {
	h := &counterHist{}
	h.call(0, "c1", 1, "add", "1").ret(10, "c1", 1, "add", "ok", 0, 1)
	h.call(5, "c2", 1, "add", "2").ret(20, "c2", 1, "add", "ok", 1, 3)
	h.call(30, "c1", 2, "add", "1").ret(40, "c1", 2, "add", "unknown", 3, 4)
	return h
}

func TestCounterCheckerTakesAnUnknownWriteAppliedOnceOrNot(t *testing.T) {
	for _, final := range []int64{3, 4} {
		r := checkCounterHist(*lostReply(), final)
		assert.Equal(t, porcupine.Ok, r.Linearizable, "final %d", final)
		assert.Empty(t, r.Violations, "final %d", final)
	}
}

func TestCounterCheckerCatchesADoubledIncrement(t *testing.T) {
	r := checkCounterHist(*lostReply(), 5) // the unknown +1 applied twice
	assert.Equal(t, porcupine.Illegal, r.Linearizable)
	assert.Contains(t, r.ViolationsByKind(), "not-linearizable")
}

func TestCounterCheckerCatchesALostIncrement(t *testing.T) {
	r := checkCounterHist(*lostReply(), 2)
	assert.Contains(t, r.ViolationsByKind(), "counter-lost-write")
	assert.Contains(t, r.ViolationsByKind(), "not-linearizable")
}

// A write reported failed must not show up in the counter.
func TestCounterCheckerCatchesAFailedWriteThatWasApplied(t *testing.T) {
	h := &counterHist{}
	h.call(0, "c1", 1, "add", "1").ret(10, "c1", 1, "add", "ok", 0, 1)
	h.call(20, "c1", 2, "add", "1").ret(30, "c1", 2, "add", "no", 1, 0)
	assert.Empty(t, checkCounterHist(*h, 1).Violations)
	assert.Equal(t, porcupine.Illegal, checkCounterHist(*h, 2).Linearizable)
}

// Two writes that both claim the same value were not both applied.
func TestCounterCheckerCatchesTwoWritesFromOneValue(t *testing.T) {
	h := &counterHist{}
	h.call(0, "c1", 1, "add", "1").ret(10, "c1", 1, "add", "ok", 0, 1)
	h.call(0, "c2", 1, "add", "1").ret(10, "c2", 1, "add", "ok", 0, 1)
	assert.Equal(t, porcupine.Illegal, checkCounterHist(*h, 1).Linearizable)
}

// A killed contender's write in flight may land, once, or not.
func TestCounterCheckerTakesAKilledContendersWriteOnceOrNot(t *testing.T) {
	for final, want := range map[int64]porcupine.CheckResult{1: porcupine.Ok, 3: porcupine.Ok, 5: porcupine.Illegal} {
		h := &counterHist{}
		h.call(0, "c1", 1, "add", "1").ret(10, "c1", 1, "add", "ok", 0, 1)
		h.call(20, "c2", 1, "add", "2").kill(30, "c2")
		assert.Equal(t, want, checkCounterHist(*h, final).Linearizable, "final %d", final)
	}
}

func TestCounterCheckerReportsNoProgress(t *testing.T) {
	h := &counterHist{}
	h.call(0, "c1", 1, "add", "1").ret(10, "c1", 1, "add", "error", 0, 0)
	assert.Contains(t, checkCounterHist(*h, 0).ViolationsByKind(), "no-progress")
}

func TestCounterCheckerCatchesAClientSeeingTheCounterGoBack(t *testing.T) {
	h := &counterHist{}
	h.call(0, "c1", 1, "add", "1").ret(10, "c1", 1, "add", "ok", 0, 1)
	h.call(20, "c1", 2, "read", "").ret(30, "c1", 2, "read", "ok", 0, 0)
	assert.Contains(t, checkCounterHist(*h, 1).ViolationsByKind(), "counter-went-back")
}
