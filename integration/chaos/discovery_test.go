package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// discoveryStart is three contenders registered at 0-20 ms, seen by c1.
func discoveryStart() *hist {
	var h hist
	for i, c := range []string{"c1", "c2", "c3"} {
		h.at(int64(i*10), c, KindStart, 0).at(int64(i*10+5), c, KindDiscoveryPlace, 0, accepted(true), token(int64(100+i)))
	}
	return &h
}

// quiet ends a history as the quiet phase does: the server's listing and
// every live contender's final view, then the quiesce.
func (h *hist) quiet(ms int64, ids string, clients ...string) *hist {
	h.at(ms, "", KindDiscoveryServer, 0, detail(ids))
	for i, c := range clients {
		h.at(ms+int64(i+1), c, KindDiscoveryFinal, 0, accepted(true), detail(ids))
	}
	return h.at(ms+100, "", KindQuiesce, 0)
}

func view(ids string) func(*Event) { return detail(ids) }

func TestCheckDiscoveryCleanRun(t *testing.T) {
	h := discoveryStart()
	h.at(100, "c1", KindDiscoveryView, 0, view("c1 c2 c3"))
	// c3 killed at 5 s: listed for a while after, gone by the deadline.
	h.at(5000, "c3", KindFault, 0, detail("kill-holder c3"))
	h.at(5010, "c3", KindKill, 0)
	h.at(6000, "c1", KindDiscoveryView, 0, view("c1 c2 c3"))
	h.at(7200, "c1", KindDiscoveryView, 0, view("c1 c2"))
	h.at(9100, "c2", KindDiscoveryView, 0, view("c1 c2"))
	h.quiet(12000, "c1 c2", "c1", "c2")
	r, s := CheckDiscovery(*h, st)
	assert.Empty(t, r.Violations)
	assert.Equal(t, 1, s.Kills)
	assert.Equal(t, 990*time.Millisecond, s.LongestListedAfterKill)
	assert.Positive(t, s.GhostJudged)
	assert.Positive(t, s.MissingJudged)
}

// A killed process still listed past its deadline by an undisturbed
// observer is a ghost; the same view within the deadline, or seen by an
// observer a fault touched, is not judged.
func TestCheckDiscoveryKilledStillListedIsAGhost(t *testing.T) {
	build := func(at int64, observerFault bool) *Report {
		h := discoveryStart()
		h.at(1000, "c3", KindFault, 0, detail("kill-holder c3"))
		h.at(1010, "c3", KindKill, 0)
		if observerFault {
			h.at(at-500, "c1", KindFault, 0, detail("blackhole-short c1"))
			h.at(at-400, "c1", KindHeal, 0, detail("blackhole-short c1"))
		}
		h.at(at, "c1", KindDiscoveryView, 0, view("c1 c2 c3"))
		h.quiet(20000, "c1 c2", "c1", "c2")
		r, _ := CheckDiscovery(*h, st)
		return r
	}
	assert.Equal(t, 1, kinds(build(1010+int64(2*st/time.Millisecond)+50, false))["discovery-ghost"])
	assert.Empty(t, build(1010+int64(2*st/time.Millisecond)-50, false).Violations)
	assert.Empty(t, build(1010+int64(2*st/time.Millisecond)+50, true).Violations)
}

// An ensemble fault after a kill moves the killed process's deadline: a new
// leader gives its session a fresh timeout.
func TestCheckDiscoveryEnsembleFaultExtendsTheDeadline(t *testing.T) {
	h := discoveryStart()
	h.at(1000, "c3", KindFault, 0, detail("kill-holder c3"))
	h.at(1010, "c3", KindKill, 0)
	h.at(2000, "server1", KindFault, 0, detail("kill-leader server1"))
	h.at(4000, "server1", KindHeal, 0, detail("kill-leader server1"))
	// 5.5 s after the kill, within 2 session timeouts of the heal: allowed.
	h.at(6500, "c1", KindDiscoveryView, 0, view("c1 c2 c3"))
	h.quiet(20000, "c1 c2", "c1", "c2")
	r, _ := CheckDiscovery(*h, st)
	assert.Empty(t, r.Violations)

	h.at(8100, "c1", KindDiscoveryView, 0, view("c1 c2 c3"))
	r, _ = CheckDiscovery(*h, st)
	assert.Equal(t, 1, kinds(r)["discovery-ghost"])
}

// A live process no fault touched for the window must be in every current
// view of an observer no fault touched; one a fault touched lately need not.
func TestCheckDiscoveryUndisturbedMissingIsReported(t *testing.T) {
	build := func(faultOn string) *Report {
		h := discoveryStart()
		if faultOn != "" {
			h.at(4000, faultOn, KindFault, 0, detail("blackhole-long "+faultOn))
			h.at(5000, faultOn, KindHeal, 0, detail("blackhole-long "+faultOn))
		}
		h.at(6000, "c1", KindDiscoveryView, 0, view("c1 c3"))
		h.quiet(20000, "c1 c2 c3", "c1", "c2", "c3")
		r, _ := CheckDiscovery(*h, st)
		return r
	}
	assert.Equal(t, 1, kinds(build(""))["discovery-missing"])
	assert.Equal(t, 1, kinds(build("c3"))["discovery-missing"], "a fault on another process does not excuse c2's absence")
	assert.Empty(t, build("c2").Violations)
	assert.Empty(t, build("c1").Violations)
	assert.Empty(t, build("server2").Violations)
}

// A process that registered lately may not be in views yet.
func TestCheckDiscoveryNewRegistrationHasTimeToShow(t *testing.T) {
	h := discoveryStart()
	h.at(5000, "c4", KindStart, 0).at(5100, "c4", KindDiscoveryPlace, 0, accepted(true), token(200))
	h.at(6000, "c1", KindDiscoveryView, 0, view("c1 c2 c3"))
	h.quiet(20000, "c1 c2 c3 c4", "c1", "c2", "c3", "c4")
	r, _ := CheckDiscovery(*h, st)
	assert.Empty(t, r.Violations)

	h.at(9200, "c1", KindDiscoveryView, 0, view("c1 c2 c3"))
	r, _ = CheckDiscovery(*h, st)
	assert.Equal(t, 1, kinds(r)["discovery-missing"])
}

// Views after the quiesce are not judged: the contenders unregister as they
// stop.
func TestCheckDiscoveryIgnoresViewsAfterQuiesce(t *testing.T) {
	h := discoveryStart()
	h.quiet(10000, "c1 c2 c3", "c1", "c2", "c3")
	h.at(10200, "c1", KindDiscoveryView, 0, view("c1"))
	r, _ := CheckDiscovery(*h, st)
	assert.Empty(t, r.Violations)
}

// Once quiet, the server's listing and every final view are exactly the
// live processes; a final comparison that never caught up is reported.
func TestCheckDiscoveryQuietListingsAreExactlyTheLive(t *testing.T) {
	h := discoveryStart()
	h.at(1000, "c3", KindFault, 0, detail("kill-waiter c3")).at(1010, "c3", KindKill, 0)
	h.at(10000, "", KindDiscoveryServer, 0, detail("c1 c2 c3"))
	h.at(10001, "c1", KindDiscoveryFinal, 0, accepted(true), detail("c1"))
	h.at(10002, "c2", KindDiscoveryFinal, 0, detail("the cache lists [c1], the server [c1 c2]"))
	h.at(10100, "", KindQuiesce, 0)
	r, _ := CheckDiscovery(*h, st)
	k := kinds(r)
	assert.Equal(t, 1, k["discovery-ghost"], "the server lists the killed c3")
	assert.Equal(t, 1, k["discovery-missing"], "c1's final view lacks c2")
	assert.Equal(t, 1, k["discovery-stale-after-quiesce"])
}

func TestCheckDiscoveryUnknownIDAndNoProgress(t *testing.T) {
	h := discoveryStart()
	h.at(100, "c1", KindDiscoveryView, 0, view("c1 c2 c3 c9"))
	h.quiet(10000, "c1 c2 c3", "c1", "c2", "c3")
	r, _ := CheckDiscovery(*h, st)
	assert.Equal(t, 1, kinds(r)["discovery-ghost"])

	r, _ = CheckDiscovery(*discoveryStart(), st)
	assert.Equal(t, 3, kinds(r)["no-progress"])
}

// A registration made again (a new node after an expiry or a delete) is
// counted.
func TestCheckDiscoveryCountsReregistrations(t *testing.T) {
	h := discoveryStart()
	h.at(1000, "c2", KindDiscoveryPlace, 0, detail("session lost"))
	h.at(1500, "c2", KindDiscoveryPlace, 0, accepted(true), token(300))
	h.at(1600, "c1", KindDiscoveryView, 0, view("c1 c2 c3"))
	h.quiet(10000, "c1 c2 c3", "c1", "c2", "c3")
	_, s := CheckDiscovery(*h, st)
	assert.Equal(t, 1, s.Reregistrations)
}
