package chaos

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Recipe names what the contenders of a run loop on.
type Recipe string

// The recipes the suite covers.
const (
	Mutex     Recipe = "mutex"
	RWLock    Recipe = "rwlock"
	Semaphore Recipe = "semaphore"
	Latch     Recipe = "latch"
	Selector  Recipe = "selector"
)

// exclusive reports whether a hold of mode excludes every other hold.
func (r Recipe) exclusive(mode string) bool {
	switch r {
	case Semaphore:
		return false
	case RWLock:
		return mode == "w"
	default:
		return true
	}
}

// fenced reports whether holds of mode write to the fenced resource.
func (r Recipe) fenced(mode string) bool { return r != Semaphore && mode != "r" }

// Hold is one granted hold rebuilt from a history.
type Hold struct {
	Client string
	Op     int
	Mode   string
	Token  int64
	// Call and OK: when the contender asked and when it reported the
	// grant.
	Call, OK int64
	// Granted is when the recipe granted it (hold.Hold.Granted, taken
	// just before the recipe's last check of the link): the hold is
	// trusted from here. A latch's term may be granted before the Await
	// that returns it is called. OK where the history does not say.
	Granted int64
	// End is when the hold stopped being trusted: the first of its loss
	// signal, its release call and the kill of its process. For a holder
	// frozen (SIGSTOP) until its session expired, End is the freeze: it
	// could not act while frozen, and what it did on waking is the
	// fenced resource's business (Zombie). A hold granted before such a
	// freeze and reported after the thaw is a zombie's too.
	End int64
	// EndedBy is "loss", "release", "kill", "freeze" or "open" (never ended:
	// a bug).
	EndedBy string
	// Returned is when the ending finished (release returned); End when it
	// is a single moment.
	Returned int64
	// Zombie is the stretch from thaw to the loss signal of a frozen
	// holder whose session expired meanwhile: it still believed it held.
	Zombie [2]int64
}

// Violation is one broken guarantee.
type Violation struct {
	Kind   string
	Detail string
	// Zxids are the nodes it rests on, by the zxids that created them:
	// the fencing tokens of the holds it names (a token is its node's
	// czxid) and the register nodes it names. A violation that rests on a
	// node the quorum never committed may be ZooKeeper's own (attribute).
	Zxids []int64
}

// Report is what the checker found in one run's history.
type Report struct {
	capacity int // holders at once the recipe allows (the semaphore's leases)

	Holds []Hold
	Asks  int
	// NotGranted counts the asks that ended without a hold: "timeout",
	// "cancelled" (quiesce) or "error".
	NotGranted  map[string]int
	Grants      int
	Losses      map[string]int // loss reasons
	Faults      map[string]int // faults injected, by kind
	Writes      int
	Accepted    int
	Stale       int // writes whose token was below a later grant's
	StaleFenced int // ... refused by the fenced resource
	// StaleFrozen counts the stale writes made by frozen-and-thawed
	// holders, the SIGSTOP case; an unfenced register takes all of them.
	StaleFrozen int
	// LateTaken counts stale writes the register took because the newer
	// holder had not written yet: fencing cannot refuse what it has not
	// been told is old.
	LateTaken     int
	FrozenOverlap int // holds of others granted while a frozen holder still believed
	// ReportedAfterThaw counts the holds granted before a freeze of their
	// process and reported only after the thaw (zombies' holds).
	ReportedAfterThaw int
	FaultsOnHolder    int // faults that hit a contender while it held
	Releads           int // terms led again by the same latch node after a loss
	// MinorityHolds counts the holds trusted when a partition cut their
	// client's server off from the quorum (checkMinority).
	MinorityHolds int
	// The fenced ZooKeeper register (CheckRegister): writes committed,
	// refused because the hold was lost, with an unknown outcome, and
	// failed otherwise.
	RegisterWrites, RegisterRefused, RegisterUnknown, RegisterFailed int
	// StalledWrites counts the fenced writes a stall-write held while
	// their hold's node was deleted, whose outcome came after the delete:
	// the writes only the server-side check could refuse.
	StalledWrites int
	MaxGap        time.Duration
	Linearizable  porcupine.CheckResult
	Violations    []Violation
	// ServerBugs: the servers' own divergence that follows from a known
	// bug of ZooKeeper's (see truncatedPastSnapshot), with its evidence:
	// reported, not counted among the recipe's violations.
	ServerBugs []string
	info       porcupine.LinearizationInfo
	model      porcupine.Model

	// Counter is the atomic counter's findings (Atomic runs only).
	Counter *CounterReport
	// Countdown is the countdown run's own count (CheckCountdown); nil
	// for the other recipes.
	Countdown *CountdownStats
}

func (r *Report) violate(kind, format string, args ...any) {
	r.violateOn(nil, kind, format, args...)
}

// violateOn reports a violation that rests on the nodes created by zxids.
func (r *Report) violateOn(zxids []int64, kind, format string, args ...any) {
	r.Violations = append(r.Violations, Violation{Kind: kind, Detail: fmt.Sprintf(format, args...), Zxids: zxids})
}

// ViolationsByKind counts the violations by kind.
func (r *Report) ViolationsByKind() map[string]int {
	m := map[string]int{}
	for _, v := range r.Violations {
		m[v.Kind]++
	}
	return m
}

// stallLimit is the longest stretch without a grant that still counts as
// progress: a server restart or leader election plus a session timeout fit
// well inside it; a node orphaned by a live session does not.
const stallLimit = 30 * time.Second

// Check rebuilds the holds of a history and checks them: no two trusted
// holds that exclude each other overlap in time (and never more than
// capacity at once), a holder whose link fails learns it within the session
// timeout, nobody is granted what a killed or frozen holder had before its
// session can have expired, the history is linearizable against the recipe's lock
// model (porcupine), fencing tokens grow from each exclusive holder to the
// next, the fenced resource took no stale write and refused no fresh one,
// and the lock never stalled.
func Check(recipe Recipe, capacity int, sessionTimeout time.Duration, history []Event) *Report {
	events := append([]Event(nil), history...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].T < events[j].T })
	r := &Report{Losses: map[string]int{}, Faults: map[string]int{}, NotGranted: map[string]int{}, capacity: capacity}
	r.Holds = rebuild(events, r)
	r.Grants = len(r.Holds)
	r.checkOverlap(recipe, capacity)
	r.checkLossSignals(events, sessionTimeout)
	r.checkMinority(recipe, events, sessionTimeout)
	r.checkEarlyGrants(recipe, sessionTimeout)
	r.checkTokens(recipe)
	r.checkWrites(recipe, events)
	r.checkProgress(events)
	r.checkLinearizable(recipe, capacity)
	return r
}

type pause struct {
	from, to int64
	expired  bool
}

// freezeEffect is what a contender's freezes make of one of its holds.
type freezeEffect int

const (
	notFrozen freezeEffect = iota
	// frozenHolder: an expired freeze began while the hold was trusted:
	// the hold is trusted until the freeze began, and its holder is a
	// zombie from the thaw until it learns.
	frozenHolder
	// grantedWhileFrozen: the grant falls while the process was stopped,
	// which cannot be (a stopped process runs nothing): the history is
	// wrong.
	grantedWhileFrozen
)

// freezeOf says what ps, a contender's freezes (KindStop to KindCont),
// make of its hold granted at granted and trusted until end, and which
// freeze. A hold granted before a freeze counts from its grant, whenever
// it was reported: its report may wait in a goroutine the freeze stopped.
func freezeOf(ps []pause, granted, end int64) (freezeEffect, pause) {
	for _, p := range ps {
		if granted > p.from && (granted < p.to || p.to == 0) {
			return grantedWhileFrozen, p
		}
		if p.expired && p.from >= granted && p.from < end {
			return frozenHolder, p
		}
	}
	return notFrozen, pause{}
}

// rebuild pairs each contender's events into holds.
func rebuild(events []Event, r *Report) []Hold {
	deleted := provenDeletes(events)
	calls := map[string]int64{} // client/op -> acquire call
	open := map[string]*Hold{}  // client -> its current hold
	pauses := map[string][]pause{}
	var holds []*Hold
	key := func(e Event) string { return fmt.Sprintf("%s/%d", e.Client, e.Op) }
	end := func(h *Hold, t int64, by string) {
		if h.EndedBy == "" {
			h.End, h.Returned, h.EndedBy = t, t, by
		}
	}
	for _, e := range events {
		h := open[e.Client]
		if h != nil && e.Kind != KindStop && e.Kind != KindCont && e.Kind != KindWrite && e.Op != 0 && e.Op != h.Op {
			h = nil
		}
		switch e.Kind {
		case KindAcquireCall:
			calls[key(e)] = e.T
			r.Asks++
		case KindAcquireFail:
			switch e.Class {
			case ClassTimeout, ClassCancelled:
				r.NotGranted[e.Class]++
			default:
				r.NotGranted[ClassError]++
			}
		case KindAcquireOK:
			h = &Hold{Client: e.Client, Op: e.Op, Mode: e.Mode, Token: e.Token, Call: calls[key(e)], OK: e.T, Granted: e.Granted}
			if h.Call == 0 {
				h.Call = e.T
			}
			if h.Granted == 0 {
				h.Granted = e.T
			}
			holds = append(holds, h)
			open[e.Client] = h
		case KindLoss:
			if h != nil {
				r.Losses[e.Detail]++
				end(h, e.T, "loss")
			}
		case KindReleaseCall:
			if h != nil {
				end(h, e.T, "release")
			}
		case KindReleaseOK:
			if h != nil {
				if h.EndedBy == "release" {
					h.Returned = e.T
				}
				delete(open, e.Client)
			}
		case KindKill:
			if h != nil {
				end(h, e.T, "kill")
				if h.Returned < e.T && h.EndedBy == "release" {
					h.Returned = e.T
				}
				delete(open, e.Client)
			}
		case KindStop:
			pauses[e.Client] = append(pauses[e.Client], pause{from: e.T})
		case KindCont:
			if ps := pauses[e.Client]; len(ps) > 0 {
				ps[len(ps)-1].to = e.T
				ps[len(ps)-1].expired = e.Detail == "expired"
			}
		case KindFault:
			r.Faults[strings.Fields(e.Detail)[0]]++
			if strings.HasSuffix(e.Detail, "(holding)") {
				r.FaultsOnHolder++
				// A node deleted from outside ends its hold when the delete
				// was sent: the next contender may be granted at once, and
				// what is asked of the holder is to learn at once
				// (checkLossSignals). Only a delete the servers' reply
				// proves, of the hold with that token.
				if f, ok := deleted[e.Client+"/"+strconv.FormatInt(e.Token, 10)]; ok && f.T == e.T && h != nil && h.Token == e.Token {
					end(h, e.T, "deleted")
				}
			}
		}
	}
	last := int64(math.MaxInt64)
	if len(events) > 0 {
		last = events[len(events)-1].T
	}
	out := make([]Hold, 0, len(holds))
	prev := map[string]*Hold{} // client -> its hold before
	for _, h := range holds {
		if h.EndedBy == "" {
			h.End, h.Returned, h.EndedBy = last, last, "open"
		}
		// A latch that leads again with the same node grants the new term
		// only once the old one's signal has fired, but the contender
		// reports that loss from a goroutine of its own, which may run a
		// moment after the new grant: one leadership, not two holders.
		if p := prev[h.Client]; p != nil && p.Token == h.Token && h.Granted < p.End {
			h.Granted = p.End
		}
		prev[h.Client] = h
		switch effect, p := freezeOf(pauses[h.Client], h.Granted, h.End); effect {
		case frozenHolder:
			h.Zombie = [2]int64{p.to, h.End}
			h.End, h.Returned, h.EndedBy = p.from, p.from, "freeze"
			if h.OK >= p.to {
				r.ReportedAfterThaw++
			}
		case grantedWhileFrozen:
			r.violate("grant-while-frozen", "%s op %d (token %d) granted at %s, while its process was stopped (from %s to %s)",
				h.Client, h.Op, h.Token, stamp(h.Granted), stamp(p.from), stamp(p.to))
		}
		out = append(out, *h)
	}
	// In the order of the grants, as the recipes made them.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Granted < out[j].Granted })
	return out
}

// checkOverlap sweeps the trusted stretches [OK, End) in time order.
func (r *Report) checkOverlap(recipe Recipe, capacity int) {
	type edge struct {
		t     int64
		start bool
		i     int
	}
	var edges []edge
	for i, h := range r.Holds {
		if h.EndedBy == "open" {
			r.violate("unterminated-hold", "%s op %d was granted and never released, lost or killed", h.Client, h.Op)
		}
		if h.Granted < h.End { // an empty stretch conflicts with nothing
			edges = append(edges, edge{h.Granted, true, i}, edge{h.End, false, i})
		}
	}
	// Ends first at equal times: the intervals are half-open.
	sort.Slice(edges, func(a, b int) bool {
		if edges[a].t != edges[b].t {
			return edges[a].t < edges[b].t
		}
		return !edges[a].start && edges[b].start
	})
	active := map[int]bool{}
	for _, e := range edges {
		if !e.start {
			delete(active, e.i)
			continue
		}
		h := r.Holds[e.i]
		for j := range active {
			o := r.Holds[j]
			if recipe.exclusive(h.Mode) || recipe.exclusive(o.Mode) {
				r.violateOn([]int64{h.Token, o.Token}, "overlap", "%s op %d (%s, token %d) granted at %s while %s op %d (%s, token %d) held since %s",
					h.Client, h.Op, h.Mode, h.Token, stamp(h.Granted), o.Client, o.Op, o.Mode, o.Token, stamp(o.Granted))
			}
		}
		active[e.i] = true
		if recipe == Semaphore && len(active) > capacity {
			var tokens []int64
			for j := range active {
				tokens = append(tokens, r.Holds[j].Token)
			}
			slices.Sort(tokens)
			r.violateOn(tokens, "over-capacity", "%d trusted leases at %s, max %d (tokens %v)", len(active), stamp(h.Granted), capacity, tokens)
		}
	}
	for i, z := range r.Holds {
		if z.Zombie[0] == 0 {
			continue
		}
		for j, h := range r.Holds {
			if i != j && h.Granted < z.Zombie[1] && h.End > z.End && (recipe.exclusive(h.Mode) || recipe.exclusive(z.Mode)) {
				r.FrozenOverlap++
			}
		}
	}
}

// checkLossSignals: a holder whose link is cut, or blackholed past the
// session timeout, must stop trusting its hold (loss signal, or its own
// release) within 2/3 of the session timeout of the fault, plus a quarter
// for scheduling: the server may expire the session 2/3 of a timeout after
// the fault (it last heard a ping up to a third earlier), and the client
// gives up on a silent link at 2/3, which is what the README promises. A
// holder killed later without having learnt counts too. A frozen holder
// must learn within a session timeout of thawing.
func (r *Report) checkLossSignals(events []Event, timeout time.Duration) {
	limit := int64(timeout*2/3 + timeout/4)
	for _, e := range events {
		if e.Kind == KindDeleted {
			r.checkDeletedNodeLearnt(events, e, int64(timeout/2))
			continue
		}
		if e.Kind != KindFault {
			continue
		}
		kind := strings.Fields(e.Detail)[0]
		if kind != string(CutHolder) && kind != string(BlackholeLong) && kind != string(RequestsDropped) && kind != string(RepliesDropped) {
			continue
		}
		for _, h := range r.Holds {
			if h.Client != e.Client || h.Granted > e.T || h.End <= e.T {
				continue
			}
			if h.End > e.T+limit {
				r.violate("late-loss-signal", "%s op %d (token %d) still trusted %s after %s",
					h.Client, h.Op, h.Token, time.Duration(h.End-e.T).Round(time.Millisecond), e.Detail)
			}
		}
	}
	for _, h := range r.Holds {
		if h.Zombie[0] != 0 && h.Zombie[1]-h.Zombie[0] > int64(timeout) {
			r.violate("late-loss-signal", "%s op %d (token %d) still trusted %s after thawing with its session expired",
				h.Client, h.Op, h.Token, time.Duration(h.Zombie[1]-h.Zombie[0]).Round(time.Millisecond))
		}
	}
}

// checkMinority: a hold trusted when a partition cut its client's server
// off from the quorum (KindMinority) must stop being trusted before anyone
// else is granted what it excludes, that is before any conflicting hold
// with a higher token (granted after it, in ZooKeeper's order) is granted
// (minority-overlap); and within the time the cut-off server takes to
// notice (quorumLossAfter: until then it still answers the client's pings)
// plus what a client takes to give up on a silent link, 2/3 of the session
// timeout, plus a quarter for scheduling (minority-late-loss). The
// semaphore's leases exclude nothing one by one: its capacity check covers
// them.
func (r *Report) checkMinority(recipe Recipe, events []Event, timeout time.Duration) {
	limit := int64(quorumLossAfter + timeout*2/3 + timeout/4)
	for _, e := range events {
		if e.Kind != KindMinority {
			continue
		}
		for _, h := range r.Holds {
			if h.Client != e.Client || h.Granted > e.T || h.End <= e.T {
				continue
			}
			r.MinorityHolds++
			if h.End > e.T+limit {
				r.violate("minority-late-loss", "%s op %d (token %d) still trusted %s after %s cut its server off",
					h.Client, h.Op, h.Token, time.Duration(h.End-e.T).Round(time.Millisecond), e.Detail)
			}
			if recipe == Semaphore {
				continue
			}
			for _, g := range r.Holds {
				if g.Client == h.Client || g.Token <= h.Token || g.Granted >= h.End || g.Granted < e.T {
					continue
				}
				if recipe.exclusive(h.Mode) || recipe.exclusive(g.Mode) {
					r.violateOn([]int64{g.Token, h.Token}, "minority-overlap", "%s op %d (token %d) granted at %s while %s op %d (token %d), cut off by %s at %s, still trusted its hold (until %s)",
						g.Client, g.Op, g.Token, stamp(g.Granted), h.Client, h.Op, h.Token, e.Detail, stamp(e.T), stamp(h.End))
				}
			}
		}
	}
}

// provenDeletes pairs each delete the nemesis recorded before sending it
// (a "(holding)" fault with the hold's token) with the KindDeleted that the
// servers' reply proves it by: client/token -> that fault. A delete that
// found no node, or whose outcome stayed unknown, is not in it.
func provenDeletes(events []Event) map[string]Event {
	faults := map[string]Event{}
	proven := map[string]Event{}
	for _, e := range events {
		k := e.Client + "/" + strconv.FormatInt(e.Token, 10)
		switch {
		case e.Kind == KindFault && e.Token != 0 && strings.HasSuffix(e.Detail, "(holding)"):
			faults[k] = e
		case e.Kind == KindDeleted:
			if f, ok := faults[k]; ok {
				proven[k] = f
			}
		}
	}
	return proven
}

// checkDeletedNodeLearnt: a holder whose node was deleted from outside must
// stop trusting its hold (loss signal, or its own release) within limit of
// the delete's proof (del, stamped when the servers' reply came): its own
// watch tells it as soon as the waiter behind is told. The hold is the one
// rebuild ended at the delete; a hold its holder had ended before has
// nothing to learn.
func (r *Report) checkDeletedNodeLearnt(events []Event, del Event, limit int64) {
	var held *Hold
	for i := range r.Holds {
		if h := &r.Holds[i]; h.Client == del.Client && h.Token == del.Token && h.EndedBy == "deleted" {
			held = h
		}
	}
	if held == nil {
		return
	}
	for _, e := range events {
		if e.Client != del.Client || e.T < held.End || (e.Kind != KindLoss && e.Kind != KindReleaseCall && e.Kind != KindKill) {
			continue
		}
		if e.T-del.T > limit {
			r.violate("late-loss-signal", "%s op %d (token %d) still trusted its hold %s after the delete of %s",
				del.Client, held.Op, held.Token, time.Duration(e.T-del.T).Round(time.Millisecond), del.Detail)
		}
		return
	}
	r.violate("late-loss-signal", "%s op %d (token %d) never learnt of the delete of %s", del.Client, held.Op, held.Token, del.Detail)
}

// checkEarlyGrants: a holder killed or frozen keeps its node until its
// session expires, at least half a session timeout later (the server
// expires a session a full timeout after it last heard from the client,
// which pings every third of it). A conflicting grant sooner means the
// lock let go of a node it should not have.
func (r *Report) checkEarlyGrants(recipe Recipe, timeout time.Duration) {
	for _, d := range r.Holds {
		if d.EndedBy != "kill" && d.EndedBy != "freeze" {
			continue
		}
		for _, h := range r.Holds {
			if h.Client == d.Client || h.Granted <= d.End || h.Granted >= d.End+int64(timeout/2) {
				continue
			}
			if recipe.exclusive(h.Mode) || recipe.exclusive(d.Mode) {
				r.violateOn([]int64{h.Token, d.Token}, "grant-before-expiry", "%s op %d granted %s after %s op %d was %s (%s)",
					h.Client, h.Op, time.Duration(h.Granted-d.End).Round(time.Millisecond), d.Client, d.Op, d.EndedBy+"ed", "its session cannot have expired yet")
			}
		}
	}
}

// checkTokens: each exclusive hold's token is above every earlier one's.
func (r *Report) checkTokens(recipe Recipe) {
	var last *Hold
	for i := range r.Holds {
		h := &r.Holds[i]
		if !recipe.exclusive(h.Mode) {
			continue
		}
		// A latch that leads again with the same node after a reconnect
		// keeps its token; anyone else's must be higher.
		sameNode := recipe == Latch && last != nil && last.EndedBy == "loss" && h.Client == last.Client && h.Token == last.Token
		if sameNode {
			r.Releads++
		}
		if last != nil && h.Token <= last.Token && !sameNode {
			r.violateOn([]int64{h.Token, last.Token}, "token-order", "%s op %d got token %d after %s op %d had %d",
				h.Client, h.Op, h.Token, last.Client, last.Op, last.Token)
		}
		last = h
	}
}

// checkWrites: a write is stale when a hold with a higher token had been
// granted before it arrived. The register must never take a token below one
// it took, and must take every fresh write; a stale write it takes because
// the newer holder had not written yet is counted (LateTaken), as fencing
// cannot do better.
func (r *Report) checkWrites(recipe Recipe, events []Event) {
	var grants []Hold // exclusive holds in grant order (Holds is)
	for _, h := range r.Holds {
		if recipe.fenced(h.Mode) {
			grants = append(grants, h)
		}
	}
	zombie := map[string][][2]int64{}
	for _, h := range r.Holds {
		if h.Zombie[0] != 0 {
			zombie[h.Client] = append(zombie[h.Client], h.Zombie)
		}
	}
	g, highest, lastTaken := 0, int64(0), int64(0)
	for _, w := range events {
		if w.Kind != KindWrite {
			continue
		}
		for g < len(grants) && grants[g].Granted < w.T {
			highest = max(highest, grants[g].Token)
			g++
		}
		r.Writes++
		if w.Accepted {
			if w.Token < lastTaken {
				r.violate("stale-write-accepted", "%s's write with token %d at %s was taken after token %d had been",
					w.Client, w.Token, stamp(w.T), lastTaken)
			}
			lastTaken = w.Token
			r.Accepted++
		}
		if w.Token >= highest {
			if !w.Accepted {
				r.violate("fresh-write-refused", "%s's write with token %d at %s was refused though no higher token had been granted",
					w.Client, w.Token, stamp(w.T))
			}
			continue
		}
		r.Stale++
		for _, z := range zombie[w.Client] {
			if w.T >= z[0] {
				r.StaleFrozen++
				break
			}
		}
		if w.Accepted {
			r.LateTaken++
		} else {
			r.StaleFenced++
		}
	}
}

// checkProgress: the longest stretch between grants, from the first ask to
// the first grant, and from the last grant to the quiesce.
func (r *Report) checkProgress(events []Event) {
	var prev int64
	for _, e := range events {
		if e.Kind == KindAcquireCall && prev == 0 {
			prev = e.T
		}
		if e.Kind == KindAcquireOK || e.Kind == KindQuiesce {
			if prev != 0 {
				r.MaxGap = max(r.MaxGap, time.Duration(e.T-prev))
			}
			prev = e.T
		}
		if e.Kind == KindQuiesce {
			break
		}
	}
	if r.MaxGap > stallLimit {
		r.violate("stall", "no grant for %s", r.MaxGap.Round(time.Millisecond))
	}
}

func stamp(t int64) string { return time.Unix(0, t).Format("15:04:05.000000") }
