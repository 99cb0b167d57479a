package chaos

import (
	"encoding/json"
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

// witnessed appends what client read of the barrier around its Enter in
// round 8.
func (h *hist) witnessed(ms int64, client string, w barrierWitness) *hist {
	w.ID = client
	b, err := json.Marshal(w)
	if err != nil {
		panic(err)
	}
	return h.at(ms, client, KindBarrierWitness, 1, mode("8"), detail(string(b)))
}

func dir(cversion int32, kids ...string) *dirListing {
	return &dirListing{Czxid: 1, Cversion: cversion, Kids: kids}
}

// madeBy is a ready node client made at czxid that nobody joined.
func madeBy(client string, czxid int64) *readyStat {
	return &readyStat{Czxid: czxid, Mzxid: czxid, Data: client}
}

// roundEight is round 8 entered by c1, c2 and c3, with c1's witness w.
func roundEight(w barrierWitness) hist {
	var h hist
	cleanRound(&h)
	h.member("c1", "8", 0, 5, 100, 160, "")
	h.member("c2", "8", 10, 30, 120, 160, "")
	h.member("c3", "8", 20, 31, 150, 159, "")
	h.witnessed(6, "c1", w)
	return h
}

func TestCheckBarrierReadyMadeWithEveryMemberIsClean(t *testing.T) {
	// c1 came last: the others' nodes were there before it.
	r, st := CheckBarrier(roundEight(barrierWitness{
		Before: dir(10, "a", "b"), Mine: 0x20, Ready: madeBy("c1", 0x21), After: dir(12, "a", "b", "c", "ready"),
	}))
	assert.Empty(t, r.Violations)
	assert.Equal(t, 1, st.Accounted)
}

func TestCheckBarrierReadyMadeAloneIsCaught(t *testing.T) {
	// The own-node bug: the first arrival makes the ready node by itself.
	r, _ := CheckBarrier(roundEight(barrierWitness{
		Before: dir(10), Mine: 0x20, Ready: madeBy("c1", 0x21), After: dir(12, "c", "ready"),
	}))
	assert.Equal(t, map[string]int{"barrier-early-enter": 1}, kinds(r))
}

func TestCheckBarrierEarlyEnterCountsMembersGoneMeanwhile(t *testing.T) {
	// a and b were there before c1's Enter and went since: c1 may have
	// counted them.
	r, _ := CheckBarrier(roundEight(barrierWitness{
		Before: dir(10, "a", "b"), Mine: 0x20, Ready: madeBy("c1", 0x21), After: dir(14, "c", "ready"),
	}))
	assert.Empty(t, r.Violations)
}

func TestCheckBarrierEarlyEnterNeedsEveryChangeAccountedFor(t *testing.T) {
	for name, w := range map[string]barrierWitness{
		// Two more changes than the listings show: a node came and went.
		"unseen member": {Before: dir(10), Mine: 0x20, Ready: madeBy("c1", 0x21), After: dir(14, "c", "ready")},
		// The directory was reaped and made again: cversions do not compare.
		"other directory":   {Before: &dirListing{Czxid: 2, Cversion: 10}, Mine: 0x20, Ready: madeBy("c1", 0x21), After: dir(12, "c", "ready")},
		"no listing before": {Mine: 0x20, Ready: madeBy("c1", 0x21), After: dir(12, "c", "ready")},
		// Made by another member, whose listing may be older than ours.
		"made by another": {Before: dir(10), Mine: 0x20, Ready: madeBy("c2", 0x21), After: dir(12, "c", "ready")},
		// Joined since: the version moved (and the node is c1's join).
		"joined": {Before: dir(10), Mine: 0x20, Ready: &readyStat{Czxid: 0x21, Mzxid: 0x25, Version: 1, Data: "c1"}, After: dir(12, "c", "ready")},
		// An older ready node: c1 did not make it in this Enter.
		"older ready": {Before: dir(10, "ready"), Mine: 0x20, Ready: &readyStat{Czxid: 0x10, Mzxid: 0x22, Version: 1, Data: "c1"}, After: dir(11, "c", "ready")},
	} {
		t.Run(name, func(t *testing.T) {
			r, st := CheckBarrier(roundEight(w))
			assert.Empty(t, r.Violations)
			assert.Equal(t, 0, st.Accounted)
		})
	}
}

func TestCheckBarrierEnterWithoutJoiningIsCaught(t *testing.T) {
	// c1's node is newer than the ready node, which nobody bumped since.
	r, _ := CheckBarrier(roundEight(barrierWitness{
		Before: dir(10, "a", "b", "ready"), Mine: 0x30, Ready: madeBy("c2", 0x21), After: dir(11, "a", "b", "c", "ready"),
	}))
	assert.Equal(t, map[string]int{"barrier-enter-unjoined": 1}, kinds(r))
}

func TestCheckBarrierLateArrivalThatJoinedIsClean(t *testing.T) {
	r, _ := CheckBarrier(roundEight(barrierWitness{
		Mine: 0x30, Ready: &readyStat{Czxid: 0x21, Mzxid: 0x31, Version: 1, Data: "c1"}, After: dir(11, "a", "b", "c", "ready"),
	}))
	assert.Empty(t, r.Violations)
}

func TestCheckBarrierWitnessWithoutItsNodeProvesNothing(t *testing.T) {
	// The node was gone by the time c1 looked (deleted, or its session
	// expired): no czxid, no claim.
	r, _ := CheckBarrier(roundEight(barrierWitness{Before: dir(10), Ready: madeBy("c2", 0x21), After: dir(12, "ready")}))
	assert.Empty(t, r.Violations)
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
