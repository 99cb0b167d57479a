package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// member appends one member's round of the double barrier: Enter called,
// entered, Leave called, Leave returned with leaveErr.
func (h *hist) member(client, round string, call, ok, leave, left int64, leaveErr string) *hist {
	h.at(call, client, KindAcquireCall, 1, mode(round))
	h.at(ok, client, KindAcquireOK, 1, mode(round))
	h.at(leave, client, KindReleaseCall, 1, mode(round))
	return h.at(left, client, KindReleaseOK, 1, mode(round), detail(leaveErr))
}

// gateWait appends a gate Wait that returned nil.
func (h *hist) gateWait(client, round string, call, ret int64) *hist {
	h.at(call, client, KindGateWaitCall, 0, mode(round))
	return h.at(ret, client, KindGateWaitOK, 0, mode(round))
}

// cleanRound is a round in which three members enter and leave together
// and a gate is set, removed, and waited on.
func cleanRound(h *hist) {
	h.member("c1", "7", 0, 30, 100, 160, "")
	h.member("c2", "7", 10, 30, 120, 160, "")
	h.member("c3", "7", 20, 31, 150, 159, "")
	h.at(0, "c4", KindGateSet, 0, mode("7"), accepted(true))
	h.gateWait("c4", "7", 1, 60)
	h.at(50, "c5", KindGateRemoveCall, 0, mode("7"))
	h.at(55, "c5", KindGateRemoveOK, 0, mode("7"))
}

func TestCheckBarrierCleanRound(t *testing.T) {
	var h hist
	cleanRound(&h)
	r, st := CheckBarrier(h)
	assert.Empty(t, r.Violations)
	assert.Equal(t, 1, st.Complete)
	assert.Equal(t, 3, st.Entered)
	assert.Equal(t, 1, st.GateWaits)
}

func TestCheckBarrierEnterBeforeEveryMemberArrivedIsCaught(t *testing.T) {
	var h hist
	cleanRound(&h)
	h.member("c1", "8", 0, 5, 100, 160, "")
	h.member("c2", "8", 10, 30, 120, 160, "")
	h.member("c3", "8", 20, 31, 150, 159, "")
	r, _ := CheckBarrier(h)
	assert.Equal(t, map[string]int{"barrier-early-enter": 1}, kinds(r))
}

func TestCheckBarrierLeaveBeforeAnEnteredMemberLeavesIsCaught(t *testing.T) {
	var h hist
	cleanRound(&h)
	h.member("c1", "8", 0, 30, 100, 110, "") // returns before c2 and c3 even began
	h.member("c2", "8", 10, 30, 120, 160, "")
	h.member("c3", "8", 20, 31, 150, 159, "")
	r, _ := CheckBarrier(h)
	assert.Equal(t, map[string]int{"barrier-early-leave": 2}, kinds(r))
}

// A member whose session was lost does not hold the others back, as long
// as its own Leave says so.
func TestCheckBarrierLeaveWithoutALostMemberIsFine(t *testing.T) {
	var h hist
	cleanRound(&h)
	h.member("c1", "8", 0, 30, 100, 110, "")
	h.member("c2", "8", 10, 30, 105, 110, "")
	h.member("c3", "8", 20, 31, 150, 159, "session lost while held")
	r, _ := CheckBarrier(h)
	assert.Empty(t, r.Violations)
}

func TestCheckBarrierWaitReturningWhileTheGateStoodIsCaught(t *testing.T) {
	var h hist
	cleanRound(&h)
	h.gateWait("c6", "7", 10, 40) // the first remove was called at 50
	r, _ := CheckBarrier(h)
	assert.Equal(t, map[string]int{"barrier-wait-while-set": 1}, kinds(r))
}

func TestCheckBarrierWithoutProgressFails(t *testing.T) {
	var h hist
	h.member("c1", "7", 0, 30, 100, 160, "")
	r, _ := CheckBarrier(h)
	assert.Equal(t, 2, kinds(r)["no-progress"])
}
