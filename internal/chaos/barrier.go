package chaos

import (
	"context"
	"errors"
	"fmt"
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
)

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
	if !sleep(ctx, time.Until(start.Add(barrierSlot/2))) {
		return nil
	}
	d, err := barrier.NewDouble(c.client, path, barrierMembers, barrier.WithParticipantID(c.spec.ID))
	if err != nil {
		return err
	}
	defer d.Close()
	c.op++
	op := c.op
	c.asking(op, round)
	ectx, cancel := context.WithDeadline(ctx, start.Add(barrierSlot*3/4))
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
	c.emit(Event{Kind: KindReleaseOK, Op: op, Mode: round, Detail: errString(err)})
	return nil
}

// BarrierStats is what a barrier run did.
type BarrierStats struct {
	Rounds int // rounds any contender took part in
	// Complete counts rounds in which at least barrierMembers members
	// entered and left without error.
	Complete        int
	Entered, Left   int
	LeaveErrors     map[string]int
	GateWaits       int // Waits that returned nil
	GateWaitsFailed int
	GateRemoves     int
}

// barrierMember is one contender's part in one round.
type barrierMember struct {
	client                        string
	call, ok, leaveCall, leaveRet int64
	leftOK, leaveFailed           bool
}

// CheckBarrier checks a barrier run: no Enter returns before
// barrierMembers members of its round have called Enter; no Leave returns
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
				st.LeaveErrors[leaveReason(e.Detail)]++
			}
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
		var calls []int64
		left := 0
		for _, m := range ms {
			if m.call != 0 {
				calls = append(calls, m.call)
			}
			if m.ok != 0 && m.leftOK {
				left++
			}
		}
		if left >= barrierMembers {
			st.Complete++
		}
		sort.Slice(calls, func(i, j int) bool { return calls[i] < calls[j] })
		for _, m := range ms {
			if m.ok == 0 {
				continue
			}
			if n := sort.Search(len(calls), func(i int) bool { return calls[i] >= m.ok }); n < barrierMembers {
				r.violate("barrier-early-enter", "round %s: %s entered at %s when only %d of %d members had called Enter",
					round, m.client, stamp(m.ok), n, barrierMembers)
			}
			if !m.leftOK {
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

// leaveReason sorts Leave's errors for the summary.
func leaveReason(detail string) string {
	for _, s := range []error{zkrecipes.ErrSessionLost, zkrecipes.ErrNodeDeleted, zkrecipes.ErrClosed, context.DeadlineExceeded, context.Canceled} {
		if strings.Contains(detail, s.Error()) {
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
