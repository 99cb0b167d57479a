package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

// Barrier is the run of recipes/barrier: the contenders meet in rounds, one
// every barrierSlot of wall-clock time (every process shares the clock).
// Each round has two phases:
//
//   - the gate, a Barrier at path/<round>/gate: every contender sets it,
//     then two in five remove it after a short while and the others Wait
//     on it (in about one round in thirteen nobody removes it, and the
//     Waits time out);
//   - the double barrier of barrierMembers members at path/d, the same
//     path every round, as a batch job's phases reuse theirs: every
//     contender Enters (a deadline inside the round), does some work, and
//     Leaves. Whatever a round leaves behind (the ready node of a round
//     whose members all gave up, a member node whose delete is on its way)
//     is there for the next round to cope with.
//
// A contender killed and replaced joins at the next round. Enter reports
// as an ask (KindAcquireCall, KindAcquireOK with the member node's czxid as
// the token, so the nemesis can aim at entered members and delete their
// nodes, KindAcquireFail), Leave as a release (KindReleaseCall,
// KindReleaseOK whose Detail is Leave's error); Mode carries the round.
//
// Members arrive staggered, hundreds of milliseconds apart, so a round
// spends a while with fewer than barrierMembers present: an Enter that
// does not wait lets its caller in alone. When Enter was called proves
// little (a member node of an earlier round may still count, and let a
// correct barrier in early), so each entered member also reports what
// ZooKeeper showed it (KindBarrierWitness): the directory just before
// Enter and, after a sync, its own node, the ready node and the directory
// just after. The checker proves early entry from those zxids alone.
const Barrier Recipe = "barrier"

const (
	// barrierSlot is one round: the gate in its first half, the double
	// barrier in its second.
	barrierSlot = 4 * time.Second
	// barrierMembers is the double barrier's memberQty: fewer than the
	// contenders, so a round goes on when a fault takes one or two out.
	barrierMembers = 3
)

// What barrier contenders report about the gate. Mode is the round.
const (
	// KindGateSet: Set returned (Accepted: without error; else Detail).
	KindGateSet Kind = "gate-set"
	// KindGateRemoveCall and KindGateRemoveOK: a contender removes the
	// gate (Detail: Remove's error).
	KindGateRemoveCall Kind = "gate-remove-call"
	KindGateRemoveOK   Kind = "gate-remove-ok"
	// KindGateWaitCall, then KindGateWaitOK (Wait returned nil: it saw the
	// gate gone) or KindGateWaitFail (Detail: the error).
	KindGateWaitCall Kind = "gate-wait-call"
	KindGateWaitOK   Kind = "gate-wait-ok"
	KindGateWaitFail Kind = "gate-wait-fail"
	// KindBarrierWitness follows a KindAcquireOK (same Op and Mode): its
	// Detail is a barrierWitness in JSON.
	KindBarrierWitness Kind = "barrier-witness"
)

// barrierWitness is what an entered member read of the double barrier.
type barrierWitness struct {
	ID string `json:"id"` // the participant id, the data of a ready node it makes
	// Before is the directory listed before Enter was called; nil when it
	// could not be listed (it was not there).
	Before *dirListing `json:"before,omitempty"`
	// Mine is the czxid of the member's own node, read after Enter returned
	// and a sync; 0 if it was gone.
	Mine int64 `json:"mine"`
	// Ready is the ready node read after that (nil: there was none).
	Ready *readyStat `json:"ready,omitempty"`
	// After is the directory listed after that.
	After *dirListing `json:"after,omitempty"`
}

type dirListing struct {
	Czxid    int64    `json:"czxid"`
	Cversion int32    `json:"cversion"`
	Kids     []string `json:"kids"`
}

type readyStat struct {
	Czxid   int64  `json:"czxid"`
	Mzxid   int64  `json:"mzxid"`
	Version int32  `json:"version"`
	Data    string `json:"data"`
}

// barrierLoop runs rounds until ctx ends.
func (c *contender) barrierLoop(ctx context.Context) error {
	for ctx.Err() == nil {
		next := time.Now().UnixNano()/int64(barrierSlot) + 1
		start := time.Unix(0, next*int64(barrierSlot))
		if !sleep(ctx, time.Until(start)) {
			return nil
		}
		round := strconv.FormatInt(next, 10)
		base := c.spec.Path + "/" + round
		if err := c.gateRound(ctx, base+"/gate", round, start); err != nil {
			return err
		}
		if err := c.doubleRound(ctx, c.spec.Path+"/d", round, start); err != nil {
			return err
		}
	}
	return nil
}

func (c *contender) gateRound(ctx context.Context, path, round string, start time.Time) error {
	g, err := barrier.New(c.client, path, barrier.WithParticipantID(c.spec.ID))
	if err != nil {
		return err
	}
	defer g.Close()
	phaseEnd := start.Add(barrierSlot * 9 / 20)
	sctx, cancel := context.WithDeadline(ctx, phaseEnd)
	defer cancel()
	err = g.Set(sctx)
	c.emit(Event{Kind: KindGateSet, Mode: round, Accepted: err == nil, Detail: errString(err)})
	if err != nil {
		return nil
	}
	if c.rng.IntN(5) < 2 {
		if !sleep(sctx, 200*time.Millisecond+time.Duration(c.rng.IntN(800))*time.Millisecond) {
			return nil
		}
		c.emit(Event{Kind: KindGateRemoveCall, Mode: round})
		err = g.Remove(sctx)
		c.emit(Event{Kind: KindGateRemoveOK, Mode: round, Detail: errString(err)})
		return nil
	}
	c.emit(Event{Kind: KindGateWaitCall, Mode: round})
	if err := g.Wait(sctx); err != nil {
		c.emit(Event{Kind: KindGateWaitFail, Mode: round, Detail: err.Error()})
	} else {
		c.emit(Event{Kind: KindGateWaitOK, Mode: round})
	}
	return nil
}

func (c *contender) doubleRound(ctx context.Context, path, round string, start time.Time) error {
	// Staggered: most arrive within 600 ms, one in four later still, so
	// the first arrivals wait a while for the rest.
	delay := time.Duration(c.rng.IntN(600)) * time.Millisecond
	if c.rng.IntN(4) == 0 {
		delay += 300 * time.Millisecond
	}
	if !sleep(ctx, time.Until(start.Add(barrierSlot/2+delay))) {
		return nil
	}
	d, err := barrier.NewDouble(c.client, path, barrierMembers, barrier.WithParticipantID(c.spec.ID))
	if err != nil {
		return err
	}
	defer d.Close()
	w := barrierWitness{ID: c.spec.ID}
	w.Before = c.listDir(ctx, path)
	c.op++
	op := c.op
	c.asking(op, round)
	ectx, cancel := context.WithDeadline(ctx, start.Add(barrierSlot*4/5))
	err = d.Enter(ectx)
	cancel()
	if err != nil {
		c.emit(Event{Kind: KindAcquireFail, Op: op, Mode: round, Detail: err.Error(), Class: errClassOf(err)})
		return nil
	}
	var token int64
	if _, st, err := c.client.Exists(context.Background(), d.Node()); err == nil && st != nil {
		token = st.Czxid
	}
	c.emit(Event{Kind: KindAcquireOK, Op: op, Mode: round, Token: token, Session: c.client.Session().ID})
	c.witness(ctx, path, d.Node(), &w)
	if b, err := json.Marshal(w); err == nil {
		c.emit(Event{Kind: KindBarrierWitness, Op: op, Mode: round, Detail: string(b)})
	}
	// The work inside the barrier; a freeze asked for by the nemesis
	// strikes here, where the member is entered.
	sleep(ctx, 50*time.Millisecond+time.Duration(c.rng.IntN(400))*time.Millisecond)
	c.freezePoint()
	// Leave even when told to quiesce: a member that entered leaves, or
	// says why it could not.
	c.emit(Event{Kind: KindReleaseCall, Op: op, Mode: round})
	lctx, cancel := context.WithDeadline(context.Background(), start.Add(barrierSlot-100*time.Millisecond))
	err = d.Leave(lctx)
	cancel()
	c.emit(Event{Kind: KindReleaseOK, Op: op, Mode: round, Detail: errString(err), Class: leaveReason(err)})
	return nil
}

// listDir lists the barrier's directory with its stat; nil if it cannot.
func (c *contender) listDir(ctx context.Context, path string) *dirListing {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	kids, st, err := c.client.Children(rctx, path)
	if err != nil || st == nil {
		return nil
	}
	return &dirListing{Czxid: st.Czxid, Cversion: st.Cversion, Kids: kids}
}

// witness reads, after a sync (so that every write committed before Enter
// returned shows), the member's own node, then the ready node, then the
// directory: each read sees at least what the one before it saw. A read
// that fails leaves its part empty, which proves nothing.
func (c *contender) witness(ctx context.Context, path, node string, w *barrierWitness) {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if node == "" || c.client.Sync(rctx, path) != nil {
		return
	}
	ok, st, err := c.client.Exists(rctx, node)
	if err != nil || !ok {
		return
	}
	w.Mine = st.Czxid
	data, rst, err := c.client.Get(rctx, path+"/ready")
	switch {
	case err == nil:
		w.Ready = &readyStat{Czxid: rst.Czxid, Mzxid: rst.Mzxid, Version: rst.Version, Data: string(data)}
	case !errors.Is(err, zk.ErrNoNode):
		return
	}
	w.After = c.listDir(rctx, path)
}

// BarrierStats is what a barrier run did.
type BarrierStats struct {
	Rounds int // rounds any contender took part in
	// Complete counts rounds in which at least barrierMembers members
	// entered and left without error.
	Complete      int
	Entered, Left int
	// Witnessed counts entered members' witnesses; Accounted those that
	// made the ready node themselves with every change of the directory
	// around their Enter accounted for, which can prove an early entry.
	Witnessed, Accounted int
	LeaveErrors          map[string]int
	GateWaits            int // Waits that returned nil
	GateWaitsFailed      int
	GateRemoves          int
}

// barrierMember is one contender's part in one round.
type barrierMember struct {
	client                        string
	call, ok, leaveCall, leaveRet int64
	leftOK, leaveFailed           bool
}

// CheckBarrier checks a barrier run: no member enters early, as its
// witness proves (see checkWitness); no Leave returns
// nil while a member that had entered before it began to leave has not
// begun to leave itself, unless that member does not leave without error
// (its node went with its session, or was deleted: it must say so); no
// gate Wait returns nil while the gate surely stood the whole time (from
// the first Set that returned to the first Remove called); and the rounds
// made progress.
func CheckBarrier(history []Event) (*Report, BarrierStats) {
	events := append([]Event(nil), history...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].T < events[j].T })
	r := &Report{Losses: map[string]int{}, Faults: map[string]int{}, NotGranted: map[string]int{}}
	r.Holds = rebuild(events, r) // asks, grants, faults and faults on entered members
	r.Grants = len(r.Holds)
	st := BarrierStats{LeaveErrors: map[string]int{}}

	type gate struct{ firstSet, firstRemove int64 }
	type wait struct {
		client    string
		call, ret int64
	}
	rounds := map[string]map[string]*barrierMember{} // round -> client/op -> member
	gates := map[string]*gate{}
	waits := map[string][]wait{}
	waitCalls := map[string]int64{}
	member := func(e Event) *barrierMember {
		ms := rounds[e.Mode]
		if ms == nil {
			ms = map[string]*barrierMember{}
			rounds[e.Mode] = ms
		}
		k := fmt.Sprintf("%s/%d", e.Client, e.Op)
		if ms[k] == nil {
			ms[k] = &barrierMember{client: e.Client}
		}
		return ms[k]
	}
	g := func(round string) *gate {
		if gates[round] == nil {
			gates[round] = &gate{}
		}
		return gates[round]
	}
	for _, e := range events {
		switch e.Kind {
		case KindAcquireCall:
			member(e).call = e.T
		case KindAcquireOK:
			member(e).ok = e.T
			st.Entered++
		case KindReleaseCall:
			member(e).leaveCall = e.T
		case KindReleaseOK:
			m := member(e)
			m.leaveRet = e.T
			if e.Detail == "" {
				m.leftOK = true
				st.Left++
			} else {
				m.leaveFailed = true
				st.LeaveErrors[e.Class]++
			}
		case KindBarrierWitness:
			var w barrierWitness
			if err := json.Unmarshal([]byte(e.Detail), &w); err != nil {
				r.violate("harness", "%s's barrier witness %q: %v", e.Client, e.Detail, err)
				continue
			}
			st.Witnessed++
			checkWitness(r, &st, e, w)
		case KindGateSet:
			if gr := g(e.Mode); e.Accepted && gr.firstSet == 0 {
				gr.firstSet = e.T
			}
		case KindGateRemoveCall:
			if gr := g(e.Mode); gr.firstRemove == 0 {
				gr.firstRemove = e.T
			}
		case KindGateRemoveOK:
			if e.Detail == "" {
				st.GateRemoves++
			}
		case KindGateWaitCall:
			waitCalls[e.Client+"/"+e.Mode] = e.T
		case KindGateWaitOK:
			waits[e.Mode] = append(waits[e.Mode], wait{client: e.Client, call: waitCalls[e.Client+"/"+e.Mode], ret: e.T})
			st.GateWaits++
		case KindGateWaitFail:
			st.GateWaitsFailed++
		}
	}

	for round, ms := range rounds {
		st.Rounds++
		left := 0
		for _, m := range ms {
			if m.ok != 0 && m.leftOK {
				left++
			}
		}
		if left >= barrierMembers {
			st.Complete++
		}
		for _, m := range ms {
			if m.ok == 0 || !m.leftOK {
				continue
			}
			for _, o := range ms {
				if o == m || o.ok == 0 || o.ok >= m.leaveCall || !o.leftOK {
					continue
				}
				if o.leaveCall > m.leaveRet {
					r.violate("barrier-early-leave", "round %s: %s left at %s, but %s, entered at %s, began to leave only at %s and left without error",
						round, m.client, stamp(m.leaveRet), o.client, stamp(o.ok), stamp(o.leaveCall))
				}
			}
		}
	}
	for round, ws := range waits {
		gr := gates[round]
		if gr == nil || gr.firstSet == 0 {
			continue
		}
		end := gr.firstRemove
		if end == 0 {
			end = 1<<63 - 1
		}
		for _, w := range ws {
			if w.call >= gr.firstSet && w.ret < end {
				r.violate("barrier-wait-while-set", "round %s: %s's Wait (%s to %s) returned while the gate stood (set at %s, first remove at %s)",
					round, w.client, stamp(w.call), stamp(w.ret), stamp(gr.firstSet), stamp(gr.firstRemove))
			}
		}
	}
	if st.Complete == 0 {
		r.violate("no-progress", "no round of the double barrier completed (%d members entered, %d left)", st.Entered, st.Left)
	}
	if st.GateWaits == 0 {
		r.violate("no-progress", "no gate Wait returned")
	}
	return r, st
}

// checkWitness proves early entry from what an entered member read of
// ZooKeeper (e is its KindBarrierWitness). Counting Enter calls cannot:
// a member node of an earlier round that is still there counts for a
// correct barrier, and a late arrival rightly joins a round that is on.
//
// barrier-enter-unjoined: the member's node is newer than the ready node's
// last change. A correct member is in a round only if its node was there
// when the ready node was made (older than its czxid) or it joined by
// bumping the ready node (older than that bump), and the ready node only
// changes later, or goes and a new one is made after the member entered.
//
// barrier-early-enter: the member made the ready node itself (its data is
// the member's id, version 0, made after its node), and every change of
// the directory's children between the listing before Enter and the one
// after is one of the differences between the two (same directory, the
// cversion grew by exactly that many). Then the members it could have
// counted before making the ready node are among the two listings; fewer
// than barrierMembers there is a ready node made too soon.
func checkWitness(r *Report, st *BarrierStats, e Event, w barrierWitness) {
	rd := w.Ready
	if w.Mine == 0 || rd == nil {
		return
	}
	if w.Mine > rd.Mzxid {
		r.violate("barrier-enter-unjoined", "round %s: %s entered with its node (czxid %#x) newer than the ready node (czxid %#x) and its last change (%#x): it neither was there when the round began nor joined it",
			e.Mode, e.Client, w.Mine, rd.Czxid, rd.Mzxid)
		return
	}
	b, a := w.Before, w.After
	if rd.Czxid < w.Mine || rd.Version != 0 || rd.Data != w.ID || b == nil || a == nil || b.Czxid != a.Czxid || !slices.Contains(a.Kids, "ready") {
		return
	}
	in := func(kids []string) map[string]bool {
		m := map[string]bool{}
		for _, k := range kids {
			m[k] = true
		}
		return m
	}
	before, after := in(b.Kids), in(a.Kids)
	changes := 0
	seen := map[string]bool{} // every child of either listing
	for k := range before {
		if !after[k] {
			changes++
		}
		seen[k] = true
	}
	for k := range after {
		if !before[k] {
			changes++
		}
		seen[k] = true
	}
	if int(a.Cversion-b.Cversion) != changes {
		return
	}
	st.Accounted++
	delete(seen, "ready")
	if len(seen) < barrierMembers {
		r.violate("barrier-early-enter", "round %s: %s entered by the ready node it made (czxid %#x) when at most %d of %d member nodes had been there since before its Enter (directory cversion %d to %d, all changes accounted for)",
			e.Mode, e.Client, rd.Czxid, len(seen), barrierMembers, b.Cversion, a.Cversion)
	}
}

// leaveReason sorts Leave's errors for the summary, by sentinel (the
// contender's side of Event.Class for a Leave).
func leaveReason(err error) string {
	if err == nil {
		return ""
	}
	for _, s := range []error{zkrecipes.ErrSessionLost, zkrecipes.ErrNodeDeleted, zkrecipes.ErrClosed, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "other"
}

// finishBarrier checks a barrier run's history and saves it.
func (r *run) finishBarrier(history []Event) *Result {
	rep, st := CheckBarrier(history)
	r.addRunFindings(rep)
	var b strings.Builder
	fmt.Fprintf(&b, "chaos %s: seed %d, %d contenders, session timeout %s, %s\n",
		r.cfg.Recipe, r.cfg.Seed, r.cfg.Contenders, r.cfg.SessionTimeout, time.Since(r.started).Round(time.Second))
	fmt.Fprintf(&b, "  rounds %d, complete %d (%d of %d members in and out); enters asked %d, entered %d, not entered: %s\n",
		st.Rounds, st.Complete, barrierMembers, r.cfg.Contenders, rep.Asks, st.Entered, counts(rep.NotGranted))
	fmt.Fprintf(&b, "  witnesses %d, %d of a ready node the member made with every change accounted for\n", st.Witnessed, st.Accounted)
	fmt.Fprintf(&b, "  left %d; leave errors: %s\n", st.Left, counts(st.LeaveErrors))
	fmt.Fprintf(&b, "  gate: waits returned %d, failed %d; removes %d\n", st.GateWaits, st.GateWaitsFailed, st.GateRemoves)
	fmt.Fprintf(&b, "  faults: %s; %d hit an entered member\n", counts(rep.Faults), rep.FaultsOnHolder)
	writeViolations(&b, rep)
	res := &Result{Config: r.cfg, Report: rep, Summary: b.String()}
	r.writeFiles(history, res)
	return res
}

// clearBarriers deletes what the barrier leaves by design once every
// contender is idle: gates and ready nodes are persistent, as Curator makes
// them, and a round cut short keeps its own. Member nodes are not touched:
// one left now is an orphan, which checkLeftovers has reported.
func (r *run) clearBarriers() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var persistent []string
	err := walk(ctx, r.operator, "/chaos/"+string(r.cfg.Recipe), func(p string, st *zk.Stat) {
		if b := framework.Base(p); st.EphemeralOwner == 0 && st.NumChildren == 0 && (b == "ready" || b == "gate") {
			persistent = append(persistent, p)
		}
	})
	if err != nil {
		r.violate("harness", "listing the barriers: %v", err)
	}
	for _, p := range persistent {
		if err := r.operator.Delete(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			r.violate("harness", "deleting %s: %v", p, err)
		}
	}
}
