package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tokens of issue 36's selector run: c2 was granted a node of the new
// epoch, then c6 one created by 0x140000000d on server 3, which truncated
// its log to 0x140000000b and loaded snapshot 0x140000000d.
const (
	phantomToken = epoch14 | 0xd
	newToken     = epoch15 | 1
)

// truncReplicas are the three servers' data directories after the TRUNC
// bug: server 3 has the node of 0x140000000d in its snapshot; servers 1
// and 2, unless majorityHad, log 0x140000000b and then the new epoch.
func truncReplicas(t *testing.T, majorityHad bool) []*replica {
	t.Helper()
	bug := t.TempDir()
	writeLog(t, bug, false, false, epoch14|0xa, epoch14|0xb)
	writeLog(t, bug, true, false, epoch15|1, epoch15|2, epoch15|3, epoch15|5)
	writeSnapshot(t, bug, epoch14|0xd, phantomToken)
	out := []*replica{}
	for id := 1; id <= 2; id++ {
		d := t.TempDir()
		if majorityHad {
			writeLog(t, d, true, false, epoch14|0xa, epoch14|0xb, epoch14|0xc, epoch14|0xd, epoch15|1, epoch15|2, epoch15|3, epoch15|5)
		} else {
			writeLog(t, d, true, false, epoch14|0xa, epoch14|0xb, epoch15|1, epoch15|2, epoch15|3, epoch15|5)
		}
		out = append(out, readReplica(id, d))
	}
	return append(out, readReplica(3, bug))
}

// checkAttributed checks a history as Run does: the checker, then the
// attribution against the replicas.
func checkAttributed(recipe Recipe, h hist, replicas []*replica) *Report {
	check := func(drop map[int64]bool) *Report { return Check(recipe, 1, st, withoutHolds(h, drop)) }
	rep := check(nil)
	attribute(rep, func() []*replica { return replicas }, holdTokens(h), func(drop map[int64]bool) []Violation { return check(drop).Violations })
	return rep
}

// c6's hold on the node the majority never had came after c2's with a
// higher token: token-order, ZooKeeper's own, with the evidence.
func phantomAfterNewHistory() hist {
	var h hist
	h.holdOf("c2", 1, 0, 10, 50, 51, token(newToken))
	h.holdOf("c6", 1, 0, 60, 90, 91, token(phantomToken))
	return h
}

func TestAViolationOnANodeTheMajorityNeverHadIsZooKeepersOwn(t *testing.T) {
	r := checkAttributed(Selector, phantomAfterNewHistory(), truncReplicas(t, false))
	assert.Empty(t, r.Violations)
	require.Len(t, r.ServerBugs, 1)
	bug := r.ServerBugs[0]
	assert.Contains(t, bug, "token-order: c6 op 1 got token 85899345933 after c2 op 1 had 90194313217")
	assert.Contains(t, bug, "zxid 0x140000000d: server3 had it (node /n-140000000d, created by it, in snapshot.140000000d)")
	assert.Contains(t, bug, "server1 never had it (its log goes from 0x140000000b to 0x1500000001")
	assert.Contains(t, bug, "server2 never had it")
}

// The same violation on a node the majority had is the recipe's.
func TestAViolationOnANodeTheMajorityHadStillCounts(t *testing.T) {
	r := checkAttributed(Selector, phantomAfterNewHistory(), truncReplicas(t, true))
	assert.Equal(t, 1, kinds(r)["token-order"])
	assert.Empty(t, r.ServerBugs)
}

// Without proof there is no attribution: data directories that cannot be
// read prove nothing.
func TestAViolationWithoutTheReplicasDataStillCounts(t *testing.T) {
	none := []*replica{readReplica(1, "/nonexistent/1"), readReplica(2, "/nonexistent/2"), readReplica(3, "/nonexistent/3")}
	r := checkAttributed(Selector, phantomAfterNewHistory(), none)
	assert.Equal(t, 1, kinds(r)["token-order"])
	assert.Empty(t, r.ServerBugs)
}

// A phantom hold must not hide the recipe's own violation behind it: c2's
// token below c1's is found once the phantom is left out (the first pass
// saw only c6's after c1's, then c2's above c6's).
func TestAPhantomHoldHidesNoViolationOfTheRecipe(t *testing.T) {
	var h hist
	h.holdOf("c1", 1, 0, 10, 50, 51, token(epoch15|5))
	h.holdOf("c6", 1, 0, 60, 90, 91, token(phantomToken))
	h.holdOf("c2", 1, 0, 100, 150, 151, token(epoch15|3))
	r := checkAttributed(Mutex, h, truncReplicas(t, false))
	require.Len(t, r.Violations, 1)
	assert.Equal(t, "token-order", r.Violations[0].Kind)
	assert.Contains(t, r.Violations[0].Detail, "c2 op 1 got token 90194313219 after c1 op 1 had 90194313221")
	require.Len(t, r.ServerBugs, 1)
	assert.Contains(t, r.ServerBugs[0], "c6 op 1 got token")
}

// A violation about time, not about who held what, is never ZooKeeper's
// own, even for a hold on a phantom node: the loss signal comes from the
// link, whatever node the hold is on.
func TestALateLossSignalOfAPhantomHoldStillCounts(t *testing.T) {
	var h hist
	h.holdOf("c2", 1, 0, 10, 50, 51, token(newToken))
	h.at(55, "c6", KindAcquireCall, 1).at(60, "c6", KindAcquireOK, 1, token(phantomToken))
	h.at(100, "c6", KindFault, 0, detail("cut-holder c6 (holding)"))
	h.at(3000, "c6", KindLoss, 1, detail("connection suspended while held"))
	h.at(3001, "c6", KindReleaseCall, 1).at(3002, "c6", KindReleaseOK, 1)
	r := checkAttributed(Mutex, h, truncReplicas(t, false))
	assert.Equal(t, 1, kinds(r)["late-loss-signal"])
	assert.Zero(t, kinds(r)["token-order"])
	assert.Len(t, r.ServerBugs, 1)
}

// Two holders at once, one of them on the phantom node: the overlap and
// the history that fits no lock are ZooKeeper's own.
func TestAnOverlapWithAPhantomHoldIsZooKeepersOwn(t *testing.T) {
	var h hist
	h.holdOf("c2", 1, 0, 10, 100, 101, token(newToken))
	h.holdOf("c6", 1, 0, 20, 60, 61, token(phantomToken))
	r := checkAttributed(Mutex, h, truncReplicas(t, false))
	assert.Empty(t, r.Violations)
	assert.Len(t, r.ServerBugs, 3, "overlap, token-order, not-linearizable")

	// With a third hold overlapping for real, that overlap counts.
	h.holdOf("c3", 1, 0, 30, 40, 41, token(epoch15|2))
	r = checkAttributed(Mutex, h, truncReplicas(t, false))
	assert.Equal(t, 1, kinds(r)["overlap"])
	assert.Equal(t, 1, kinds(r)["not-linearizable"])
}

// The partitioner's checks are attributed the same way.
func TestAnItemOwnedTwiceThroughAPhantomHoldIsZooKeepersOwn(t *testing.T) {
	var h hist
	h.at(0, "c2", KindAcquireOK, 1, item("item-07"), token(newToken))
	h.at(5, "c6", KindAcquireOK, 1, item("item-07"), token(phantomToken))
	h.at(6, "c6", KindLoss, 1, detail("session lost")).at(7, "c2", KindReleaseCall, 1)
	h.at(70, "c2", KindPartitionFinal, 0, accepted(true))
	replicas := truncReplicas(t, false)
	check := func(drop map[int64]bool) *Report { r, _ := CheckPartition(withoutHolds(h, drop)); return r }
	r := check(nil)
	require.NotEmpty(t, r.Violations)
	attribute(r, func() []*replica { return replicas }, holdTokens(h), func(drop map[int64]bool) []Violation { return check(drop).Violations })
	assert.Empty(t, r.Violations)
	require.Len(t, r.ServerBugs, 1)
	assert.Contains(t, r.ServerBugs[0], "token-order: item-07: c2 was granted token 90194313217 before c6 was granted the lower token 85899345933")
}
