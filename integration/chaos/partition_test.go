package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func item(it string) func(*Event) { return func(e *Event) { e.Item = it } }

// Items handed from member to member, each grant after the previous holder
// stopped trusting its hold (released, lost, killed, its node deleted), and
// every item owned at the end: no violation.
func TestCheckPartitionCleanRun(t *testing.T) {
	var h hist
	h.at(0, "c1", KindAcquireOK, 1, item("a"), token(10)).at(0, "c1", KindAcquireOK, 2, item("b"), token(11))
	h.at(5, "c2", KindAcquireOK, 1, item("c"), token(12))
	h.at(10, "c1", KindReleaseCall, 1).at(11, "c2", KindAcquireOK, 2, item("a"), token(20))
	h.at(20, "c2", KindLoss, 2, detail("partition /p: suspended")).at(25, "c1", KindAcquireOK, 3, item("a"), token(30))
	h.at(30, "c1", KindKill, 0).at(31, "c2", KindAcquireOK, 3, item("b"), token(31)).at(31, "c2", KindAcquireOK, 4, item("a"), token(32))
	h.at(40, "c2", KindFault, 0, token(32), detail("delete-node c2 /chaos/partition/items/a/_c_x-lock-0000000003 (holding)"))
	h.at(40, "c2", KindDeleted, 0, token(32), zxid(39))
	h.at(41, "c3", KindAcquireOK, 1, item("a"), token(40))
	h.at(60, "", KindQuiesce, 0)
	h.at(70, "c2", KindPartitionFinal, 0, accepted(true)).at(71, "c3", KindPartitionFinal, 0, accepted(true))
	h.at(80, "c2", KindReleaseCall, 1).at(80, "c2", KindReleaseCall, 3).at(80, "c2", KindReleaseCall, 4).at(81, "c3", KindReleaseCall, 1)
	r, s := CheckPartition(h)
	assert.Empty(t, r.Violations)
	assert.Equal(t, 8, s.Grants)
	assert.Equal(t, 2, s.Finals)
}

// An item granted while its previous holder still trusted its hold, a
// grant out of token order, a hold that never ended and an item without an
// owner at the end are each a violation; a grant while a frozen holder's
// session had expired is counted, not failed.
func TestCheckPartitionCatchesEachBrokenPromise(t *testing.T) {
	var h hist
	h.at(0, "c1", KindAcquireOK, 1, item("a"), token(10)).at(5, "c2", KindAcquireOK, 1, item("a"), token(20))
	h.at(6, "c1", KindReleaseCall, 1).at(7, "c2", KindReleaseCall, 1)
	h.at(10, "c1", KindAcquireOK, 2, item("b"), token(40)).at(11, "c1", KindReleaseCall, 2)
	h.at(12, "c2", KindAcquireOK, 2, item("b"), token(30)).at(13, "c2", KindReleaseCall, 2)
	h.at(14, "c3", KindAcquireOK, 1, item("c"), token(50))
	h.at(70, "c1", KindPartitionFinal, 0, detail("items without a member holding them: a"))
	r, _ := CheckPartition(h)
	k := kinds(r)
	assert.Equal(t, 1, k["owned-twice"])
	assert.Equal(t, 1, k["token-order"])
	assert.Equal(t, 1, k["open-hold"])
	assert.Equal(t, 1, k["unowned-after-quiesce"])

	var frozen hist
	frozen.at(0, "c1", KindAcquireOK, 1, item("a"), token(10)).at(5, "c1", KindStop, 0)
	frozen.at(20, "c2", KindAcquireOK, 1, item("a"), token(20)).at(30, "c1", KindCont, 0, detail("expired"))
	frozen.at(31, "c1", KindLoss, 1, detail("session lost")).at(40, "c2", KindReleaseCall, 1)
	frozen.at(70, "c2", KindPartitionFinal, 0, accepted(true))
	r, s := CheckPartition(frozen)
	assert.Empty(t, r.Violations)
	assert.Equal(t, 1, s.FrozenOverlap)

	var none hist
	none.at(0, "c1", KindStart, 0)
	r, _ = CheckPartition(none)
	assert.Equal(t, 2, kinds(r)["no-progress"])
}

// Issue 36's item-07: c7 froze itself at a check of item-11 as its
// acquire of item-07 was completing; its session expired, c6 was granted
// item-07 with a higher token and held it; c7 thawed and its worker
// reported item-07 with the older token, its loss signal 2 ms after. The
// grant's time decides: before the freeze, a zombie's hold (fencing's
// case, counted); while frozen, impossible; without it, the grants are out
// of token order.
func TestCheckPartitionAGrantMadeBeforeAFreezeAndReportedAfterIt(t *testing.T) {
	build := func(grantedAt int64) *Report {
		var h hist
		h.at(0, "c7", KindAcquireOK, 1, item("item-11"), token(210453397500), granted(0))
		h.at(20, "c7", KindTrusted, 1, item("item-11")).at(21, "c7", KindFreezing, 0).at(22, "c7", KindStop, 0)
		h.at(2500, "c6", KindAcquireOK, 1, item("item-07"), token(210453397642), granted(2499))
		h.at(5000, "c7", KindCont, 0, detail("expired"))
		opts := []func(*Event){item("item-07"), token(210453397604)}
		if grantedAt != 0 {
			opts = append(opts, granted(grantedAt))
		}
		h.at(5200, "c7", KindAcquireOK, 2, opts...)
		h.at(5202, "c7", KindLoss, 2, detail("session lost")).at(5203, "c7", KindLoss, 1, detail("session lost"))
		h.at(6000, "c6", KindReleaseCall, 1)
		h.at(7000, "c6", KindPartitionFinal, 0, accepted(true))
		r, s := CheckPartition(h)
		r.FrozenOverlap = s.FrozenOverlap
		return r
	}
	r := build(21)
	assert.Empty(t, r.Violations)
	assert.Equal(t, 1, r.FrozenOverlap)

	assert.Equal(t, 1, kinds(build(1000))["grant-while-frozen"])
	assert.Equal(t, 1, kinds(build(0))["token-order"], "counted from its report, it comes after c6's higher token")
}

// A worker winds down after its context ends and reports the end as it
// returns. The next grant of the item must come after that report, unless
// the loss signal fired first: then the trust ended at the signal (the
// library cannot stop a worker that does not listen), and the worker's
// later return counts for nothing.
func TestCheckPartitionTrustEndsAtTheWorkersReturnOrTheLossSignal(t *testing.T) {
	build := func(c1 func(h *hist)) *Report {
		var h hist
		h.at(0, "c1", KindAcquireOK, 1, item("a"), token(10), granted(0))
		c1(&h)
		h.at(100, "c2", KindAcquireOK, 1, item("a"), token(20), granted(100))
		h.at(500, "c2", KindReleaseCall, 1)
		h.at(600, "c2", KindPartitionFinal, 0, accepted(true))
		r, _ := CheckPartition(h)
		return r
	}
	// Moved: the worker returned before the lock went to c2.
	assert.Empty(t, build(func(h *hist) { h.at(90, "c1", KindReleaseCall, 1) }).Violations)
	// Moved, the lock given back while the worker was still winding down.
	assert.Equal(t, 1, kinds(build(func(h *hist) { h.at(180, "c1", KindReleaseCall, 1) }))["owned-twice"])
	// Lost: the session's loss ended the trust; the worker returned later.
	assert.Empty(t, build(func(h *hist) {
		h.at(50, "c1", KindLoss, 1, detail("partition /p: suspended")).at(180, "c1", KindReleaseCall, 1)
	}).Violations)
}
