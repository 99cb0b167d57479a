package chaos

import (
	"fmt"

	"testing"

	"github.com/stretchr/testify/assert"
)

// ok appends a successful increment from version v.
func (h *hist) casOK(ms int64, client string, op int, v int32) *hist {
	h.at(ms, client, KindCASCall, op)
	return h.at(ms+1, client, KindCASOK, op, detail(sprintf("v=%d value=%d -> v=%d", v, sharedSeed+v, v+1)))
}

func (h *hist) seen(ms int64, client string, v int32, zxid int64) *hist {
	return h.at(ms, client, KindSeen, 0, token(zxid), detail(sprintf("v=%d value=%d", v, sharedSeed+v)))
}

func TestCheckSharedCleanRun(t *testing.T) {
	var h hist
	h.at(0, "c1", KindStart, 0)
	h.casOK(10, "c1", 1, 0).casOK(20, "c2", 1, 1)
	h.at(30, "c1", KindCASCall, 2).at(31, "c1", KindCASRefused, 2)
	h.at(40, "c2", KindCASCall, 2).at(45, "c2", KindCASUnknown, 2, detail("outcome unknown"))
	h.seen(11, "c1", 0, 5).seen(21, "c1", 2, 9).seen(50, "c1", 3, 12)
	h.at(60, "", KindQuiesce, 0).at(70, "c1", KindSharedFinal, 0, accepted(true))
	r, s := CheckShared(h, SharedFinal{Version: 3, Value: sharedSeed + 3})
	assert.Empty(t, r.Violations)
	assert.Equal(t, 2, s.OK)
	assert.Equal(t, 1, s.Unknown)
	// Without the unknown one applied, too.
	r, _ = CheckShared(h, SharedFinal{Version: 2, Value: sharedSeed + 2})
	assert.Empty(t, r.Violations)
}

func TestCheckSharedCatchesEachBrokenPromise(t *testing.T) {
	var h hist
	h.at(0, "c1", KindStart, 0)
	h.casOK(10, "c1", 1, 0).casOK(20, "c2", 1, 0) // two successes from version 0
	h.seen(11, "c1", 1, 7).seen(21, "c1", 0, 5)   // backwards
	h.at(30, "c2", KindSharedFinal, 0, detail("v=2, still at 1"))
	r, _ := CheckShared(h, SharedFinal{Version: 1, Value: sharedSeed + 1})
	k := kinds(r)
	assert.Equal(t, 1, k["shared-double-success"])
	assert.Equal(t, 1, k["shared-feed-backwards"])
	assert.Equal(t, 1, k["shared-stale-after-quiesce"])
	assert.Equal(t, 1, k["shared-final"], "2 successes, and the node at version 1: a lost increment")

	var none hist
	none.at(0, "c1", KindStart, 0).at(5, "c1", KindCASCall, 1).at(6, "c1", KindCASRefused, 1)
	r, _ = CheckShared(none, SharedFinal{Version: 0, Value: sharedSeed})
	assert.Equal(t, 1, kinds(r)["no-progress"])

	var torn hist
	torn.at(0, "c1", KindStart, 0).casOK(10, "c1", 1, 0)
	torn.at(20, "c1", KindSeen, 0, token(9), detail("v=1 value=5"))
	r, _ = CheckShared(torn, SharedFinal{Version: 1, Value: 7})
	assert.Equal(t, 1, kinds(r)["shared-torn-read"])
	assert.Equal(t, 1, kinds(r)["shared-final"])
}

var sprintf = fmt.Sprintf
