package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// The shared count (recipes/shared) in the suite. Contenders add 1 to one
// Curator SharedCount with compare-and-set loops (Count.TrySet) under every
// fault, and follow it through a subscription. ZooKeeper's version of the
// node numbers its writes, so the checker needs no clock: each version was
// made by exactly one write, every write adds 1, so the count at version v
// is sharedSeed+v, no two successes started from the same version, and the
// final version lies between the successes and the successes plus the
// writes whose outcome was unknown. A follower's values only ever go
// forward, and at the end every follower has caught up.

// SharedCount is the shared count's recipe name.
const SharedCount Recipe = "sharedcount"

// What a shared-count contender reports. Op numbers its tries; Token
// carries a zxid where one is known; Detail the versions and values.
const (
	// KindCASCall: a TrySet from "v=<version> value=<count>" is sent.
	KindCASCall Kind = "cas-call"
	// KindCASOK: it wrote: "v=<from> value=<count> -> v=<to>"; Token is
	// the new value's zxid.
	KindCASOK Kind = "cas-ok"
	// KindCASRefused: someone else's write came first; nothing written.
	KindCASRefused Kind = "cas-refused"
	// KindCASUnknown: the reply was lost (or the call gave up once it was
	// sent): it may have been applied.
	KindCASUnknown Kind = "cas-unknown"
	// KindSeen: the contender's subscription delivered "v=<version>
	// value=<count>"; Token is its zxid.
	KindSeen Kind = "seen"
	// KindSharedFinal: after quiesce, whether (Accepted) the contender's
	// count caught up with the node as read then ("v=<version>").
	KindSharedFinal Kind = "shared-final"
)

// sharedSeed is the count's seed: the node's value at version 0.
const sharedSeed = 1000

// sharedLoop is a shared-count contender: TrySet increments until ctx ends,
// a subscription reporting every value it delivers, then a last check that
// the count caught up.
func (c *contender) sharedLoop(ctx context.Context) error {
	n, err := shared.NewCount(c.client, c.spec.Path, sharedSeed)
	if err != nil {
		return err
	}
	defer n.Close()
	if !startRetrying(ctx, n.Start, "start") {
		return nil
	}
	sub := n.Subscribe()
	seen := make(chan struct{})
	go func() {
		defer close(seen)
		var last int64
		for v := range sub.Changes() {
			if v.Zxid == last {
				continue // the same value again, saying it may be stale or is current
			}
			last = v.Zxid
			c.emit(Event{Kind: KindSeen, Token: v.Zxid, Detail: fmt.Sprintf("v=%d value=%d", v.Version, v.Value)})
		}
	}()
	defer func() { _ = n.Close(); <-seen }()

	for ctx.Err() == nil {
		c.casOnce(ctx, n)
		c.think(ctx)
	}
	c.sharedFinal(n)
	return nil
}

// casOnce is one increment try. A freeze asked for by the nemesis stops the
// process between the read and the write, so that it wakes to write from a
// version that others have long replaced.
func (c *contender) casOnce(ctx context.Context, n *shared.Count) {
	if s := c.client.Session().ID; s != c.session && s != 0 {
		c.session = s
		c.emit(Event{Kind: KindSession, Session: s})
	}
	cur, err := n.Get()
	if err != nil {
		return // bad data or closed: nothing to try from
	}
	c.op++
	op := c.op
	c.freezePoint()
	c.emit(Event{Kind: KindCASCall, Op: op, Token: cur.Zxid, Detail: fmt.Sprintf("v=%d value=%d", cur.Version, cur.Value)})
	tctx, cancel := context.WithTimeout(context.Background(), 2*time.Second+time.Duration(c.rng.IntN(3000))*time.Millisecond)
	next, ok, err := n.TrySet(tctx, cur, cur.Value+1)
	cancel()
	switch {
	case err == nil && ok:
		c.emit(Event{Kind: KindCASOK, Op: op, Token: next.Zxid, Detail: fmt.Sprintf("v=%d value=%d -> v=%d", cur.Version, cur.Value, next.Version)})
	case err == nil:
		c.emit(Event{Kind: KindCASRefused, Op: op})
	default:
		// Only a write refused before it was sent is known not to have
		// been applied; counting every error as unknown only widens the
		// checker's bound.
		c.emit(Event{Kind: KindCASUnknown, Op: op, Detail: err.Error()})
		if !errors.Is(err, zkrecipes.ErrOutcomeUnknown) {
			sleep(ctx, 50*time.Millisecond)
		}
	}
}

// sharedFinal reports whether the count caught up with the node: the
// follower has at least the version the node has now, and says it is
// fresh.
func (c *contender) sharedFinal(n *shared.Count) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var want int32 = -1
	if err := c.client.Sync(ctx, c.spec.Path); err == nil {
		if _, st, err := c.client.Get(ctx, c.spec.Path); err == nil {
			want = st.Version
		}
	}
	if want < 0 {
		c.emit(Event{Kind: KindSharedFinal, Detail: "could not read the node"})
		return
	}
	for {
		got, err := n.Get()
		if err == nil && got.Version >= want && n.Err() == nil {
			c.emit(Event{Kind: KindSharedFinal, Accepted: true, Detail: fmt.Sprintf("v=%d", got.Version)})
			return
		}
		if !sleep(ctx, 10*time.Millisecond) { // polling the follower's view
			c.emit(Event{Kind: KindSharedFinal, Detail: fmt.Sprintf("v=%d, still at %+v (err %v)", want, got, n.Err())})
			return
		}
	}
}

// SharedFinal is the node as the checker reads it after the run.
type SharedFinal struct {
	Version int32
	Value   int32
}

// SharedStats are a shared-count run's numbers.
type SharedStats struct {
	Calls, OK, Refused, Unknown, Seen int
	MaxGap                            time.Duration
}

// CheckShared checks a shared-count run's history against the node's
// final state (see the comment at the top of this file).
func CheckShared(history []Event, final SharedFinal) (*Report, SharedStats) {
	events := append([]Event(nil), history...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].T < events[j].T })
	r := &Report{Losses: map[string]int{}, Faults: map[string]int{}, NotGranted: map[string]int{}}
	var s SharedStats
	from := map[int32]string{} // version -> the success that started from it
	type view struct {
		zxid    int64
		version int32
	}
	views := map[string]view{}
	var first, last, quiesce int64
	for _, e := range events {
		switch e.Kind {
		case KindFault:
			r.Faults[strings.Fields(e.Detail + " ?")[0]]++
		case KindQuiesce:
			quiesce = e.T
		case KindStart:
			if first == 0 {
				first, last = e.T, e.T
			}
		case KindCASCall:
			s.Calls++
		case KindCASRefused:
			s.Refused++
		case KindCASUnknown:
			s.Unknown++
		case KindCASOK:
			s.OK++
			var fv, val, tv int32
			if _, err := fmt.Sscanf(e.Detail, "v=%d value=%d -> v=%d", &fv, &val, &tv); err != nil {
				r.violate("harness", "%s op %d: cas-ok %q", e.Client, e.Op, e.Detail)
				continue
			}
			who := fmt.Sprintf("%s op %d", e.Client, e.Op)
			if other, ok := from[fv]; ok {
				r.violate("shared-double-success", "%s and %s both wrote from version %d", other, who, fv)
			}
			from[fv] = who
			if tv != fv+1 {
				r.violate("shared-chain", "%s wrote from version %d and got version %d", who, fv, tv)
			}
			if val != sharedSeed+fv {
				r.violate("shared-torn-read", "%s read count %d at version %d; the count at version %d is %d", who, val, fv, fv, sharedSeed+fv)
			}
			if tv > final.Version {
				r.violate("shared-lost-write", "%s made version %d; the node ended at version %d", who, tv, final.Version)
			}
			if quiesce == 0 || e.T < quiesce {
				s.MaxGap = max(s.MaxGap, time.Duration(e.T-last))
				last = e.T
			}
		case KindSeen:
			s.Seen++
			var v, val int32
			if _, err := fmt.Sscanf(e.Detail, "v=%d value=%d", &v, &val); err != nil {
				r.violate("harness", "%s: seen %q", e.Client, e.Detail)
				continue
			}
			if val != sharedSeed+v {
				r.violate("shared-torn-read", "%s was delivered count %d at version %d", e.Client, val, v)
			}
			if prev, ok := views[e.Client]; ok && (e.Token <= prev.zxid || v <= prev.version) {
				r.violate("shared-feed-backwards", "%s was delivered version %d (zxid %d) after version %d (zxid %d)", e.Client, v, e.Token, prev.version, prev.zxid)
			}
			views[e.Client] = view{e.Token, v}
		case KindSharedFinal:
			if !e.Accepted {
				r.violate("shared-stale-after-quiesce", "%s: %s", e.Client, e.Detail)
			}
		}
	}
	if final.Value != sharedSeed+final.Version {
		r.violate("shared-final", "the node ended at count %d, version %d: the count at version %d is %d", final.Value, final.Version, final.Version, sharedSeed+final.Version)
	}
	if int(final.Version) < s.OK || int(final.Version) > s.OK+s.Unknown {
		r.violate("shared-final", "the node ended at version %d: %d increments succeeded and %d may have, so it must be in [%d, %d]",
			final.Version, s.OK, s.Unknown, s.OK, s.OK+s.Unknown)
	}
	if s.OK == 0 {
		r.violate("no-progress", "no increment succeeded")
	}
	if quiesce != 0 && last != 0 {
		s.MaxGap = max(s.MaxGap, time.Duration(quiesce-last))
	}
	if s.MaxGap > stallLimit {
		r.violate("stall", "%s without a successful increment", s.MaxGap.Round(time.Millisecond))
	}
	return r, s
}

// finishShared reads the node, checks the run and writes its files: the
// shared count's end of Run.
func (r *run) finishShared(history []Event) *Result {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data, st, err := r.operator.Get(ctx, "/chaos/"+string(r.cfg.Recipe))
	if err != nil {
		r.t.Fatalf("chaos: reading the shared count: %v", err)
	}
	n, err := shared.DecodeCount(data)
	if err != nil {
		r.t.Fatalf("chaos: the shared count: %v", err)
	}
	final := SharedFinal{Version: st.Version, Value: n}
	rep, stats := CheckShared(history, final)
	r.addRunFindings(rep)
	var b strings.Builder
	fmt.Fprintf(&b, "chaos %s: seed %d, %d contenders, session timeout %s, %s\n",
		r.cfg.Recipe, r.cfg.Seed, r.cfg.Contenders, r.cfg.SessionTimeout, time.Since(r.started).Round(time.Second))
	fmt.Fprintf(&b, "  TrySet increments %d: succeeded %d, refused %d, outcome unknown %d; longest stretch without a success %s\n",
		stats.Calls, stats.OK, stats.Refused, stats.Unknown, stats.MaxGap.Round(time.Millisecond))
	fmt.Fprintf(&b, "  final count %d at version %d (seed %d); values delivered to followers %d\n", final.Value, final.Version, sharedSeed, stats.Seen)
	fmt.Fprintf(&b, "  faults: %s\n", counts(rep.Faults))
	writeViolations(&b, rep)
	res := &Result{Config: r.cfg, Report: rep, Summary: b.String()}
	r.writeFiles(history, res)
	return res
}
