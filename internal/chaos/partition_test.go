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
	h.at(40, "c2", KindFault, 0, detail("delete-node c2 /chaos/partition/items/a/_c_x-lock-0000000003 (holding)"))
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
