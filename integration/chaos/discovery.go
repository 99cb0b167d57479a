package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// Service discovery (recipes/discovery) in the suite. Every contender
// registers a Dynamic instance of one service, its id its contender name,
// and keeps a service cache of that service. It reports its sessions, each
// change of its registration's persistent.Status (in place or not, the
// node's czxid and owner), and, every time it finds its cache current, the
// ids it lists. A process cannot tell when the server expired its session
// (under dropped replies its pings still arrive), so the checker judges by
// what the harness knows for certain, the kills and the faults' times, and
// allows their windows of doubt:
//
//   - a process killed with SIGKILL is in no current view of an undisturbed
//     observer, nor in the server's listing once quiet, from a session
//     timeout plus a margin after its kill (later if the ensemble was
//     faulted meanwhile: a new leader gives every session a fresh timeout);
//   - a live, registered process that no fault touched for a session timeout
//     plus a margin is in every current view of an observer no fault touched
//     either (an ensemble fault touches everyone);
//   - once quiet (every fault healed, the killed processes' sessions gone),
//     the server's listing and every live process's current view are exactly
//     the live processes.

// Discovery is service discovery's recipe name.
const Discovery Recipe = "discovery"

// discoveryService is the service every discovery contender registers in.
const discoveryService = "svc"

// What a discovery contender, and the orchestrator for it, report.
const (
	// KindDiscoveryPlace: the contender's registration changed (Accepted:
	// in place; Token: its node's czxid; Session: the node's owner;
	// Detail: why not in place).
	KindDiscoveryPlace Kind = "discovery-place"
	// KindDiscoveryView: the contender's cache was current and listed the
	// ids in Detail (sorted, space-separated) at this moment.
	KindDiscoveryView Kind = "discovery-view"
	// KindDiscoveryStale: the cache said its view may be stale (Detail).
	KindDiscoveryStale Kind = "discovery-stale"
	// KindDiscoveryFinal: asked once the run was quiet, whether (Accepted)
	// the cache became current with the server's listing, read after a
	// sync, within a minute; Detail: the ids it listed then, or why not.
	KindDiscoveryFinal Kind = "discovery-final"
	// KindDiscoveryServer (orchestrator): the server's listing, read after
	// a sync once every fault healed and every killed process's session
	// was gone; Detail: the ids.
	KindDiscoveryServer Kind = "discovery-server"
)

// discoveryPoll is how often a contender looks at its cache and its
// registration; discoveryEvery is how long a current view goes unreported
// when nothing changes.
const (
	discoveryPoll  = 50 * time.Millisecond
	discoveryEvery = 250 * time.Millisecond
)

// discoveryLoop is a discovery contender: its registration and its cache,
// looked at until ctx ends; the final comparison when the orchestrator asks
// for it. Closing the Discovery on return unregisters.
func (c *contender) discoveryLoop(ctx context.Context) error {
	d, err := discovery.New(c.client, c.spec.Path)
	if err != nil {
		return err
	}
	defer d.Close()
	inst := discovery.NewInstance(discoveryService)
	inst.ID = c.spec.ID
	inst.Address = "127.0.0.1"
	port := os.Getpid()
	inst.Port = &port
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := d.Register(rctx, inst)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		fmt.Fprintln(os.Stderr, "chaos contender: register:", err)
	}
	ch, err := d.NewCache(discoveryService)
	if err != nil {
		return err
	}
	defer ch.Close()
	if !startRetrying(ctx, ch.Start, "cache start") {
		return nil
	}

	var o discoveryObserver
	finalAsk := c.finalAsk
	tick := time.NewTicker(discoveryPoll)
	defer tick.Stop()
	for n := 0; ctx.Err() == nil; n++ {
		c.freezePoint()
		c.observeDiscovery(d, ch, &o)
		// Now and then the registration's data changes (Curator's
		// updateService), a write under whatever fault is on.
		if n%20 == 19 {
			p := 1024 + c.rng.IntN(60000)
			inst.Port = &p
			uctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			_ = d.Update(uctx, inst)
			cancel()
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		case <-finalAsk:
			finalAsk = nil
			c.discoveryFinal(ch)
		}
	}
	return nil
}

// discoveryObserver is what a contender last reported.
type discoveryObserver struct {
	place    string // InPlace, czxid and owner of the last status reported
	current  bool
	ids      string
	reported time.Time
}

// observeDiscovery reports what changed: the session, the registration's
// status, the cache going stale, and the ids of a current view (each time
// they change, and every discoveryEvery anyway, so that the checker has
// moments to judge).
func (c *contender) observeDiscovery(d *discovery.Discovery, ch *discovery.Cache, o *discoveryObserver) {
	if s := c.client.Session().ID; s != c.session && s != 0 {
		c.session = s
		c.emit(Event{Kind: KindSession, Session: s})
	}
	if st, ok := d.Registration(c.spec.ID); ok {
		if key := fmt.Sprintf("%t %d %d", st.InPlace, st.Czxid, st.Owner); key != o.place {
			o.place = key
			c.emit(Event{Kind: KindDiscoveryPlace, Accepted: st.InPlace, Token: st.Czxid, Session: st.Owner, Detail: errString(st.Err)})
		}
	}
	insts, err := ch.Instances()
	if err != nil {
		if o.current || o.reported.IsZero() {
			c.emit(Event{Kind: KindDiscoveryStale, Detail: err.Error()})
			o.reported = time.Now()
		}
		o.current = false
		return
	}
	ids := instanceIDs(insts)
	if !o.current || ids != o.ids || time.Since(o.reported) >= discoveryEvery {
		c.emit(Event{Kind: KindDiscoveryView, Detail: ids})
		o.current, o.ids, o.reported = true, ids, time.Now()
	}
}

func instanceIDs(insts []discovery.Instance) string {
	ids := make([]string, len(insts))
	for i, in := range insts {
		ids[i] = in.ID
	}
	slices.Sort(ids)
	return strings.Join(ids, " ")
}

// discoveryFinal waits, a minute at most, until the cache is current and
// lists what the server lists (read after a sync), and reports it.
func (c *contender) discoveryFinal(ch *discovery.Cache) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var diff string
	for {
		server, err := serviceListing(ctx, c.client, framework.Join(c.spec.Path, discoveryService))
		if err == nil {
			insts, cerr := ch.Instances()
			got := instanceIDs(insts)
			switch {
			case cerr != nil:
				diff = fmt.Sprintf("not current: %v (listing [%s], server [%s])", cerr, got, server)
			case got != server:
				diff = fmt.Sprintf("the cache lists [%s], the server [%s]", got, server)
			default:
				c.emit(Event{Kind: KindDiscoveryFinal, Accepted: true, Detail: got})
				return
			}
		} else {
			diff = "reading the server: " + err.Error()
		}
		if !sleep(ctx, discoveryPoll) { // polling until the view settles
			c.emit(Event{Kind: KindDiscoveryFinal, Detail: diff})
			return
		}
	}
}

// serviceListing reads the instance ids under path after a sync, sorted
// and space-separated; none if path does not exist.
func serviceListing(ctx context.Context, c *framework.Client, path string) (string, error) {
	if err := c.Sync(ctx, "/"); err != nil {
		return "", err
	}
	kids, _, err := c.Children(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	slices.Sort(kids)
	return strings.Join(kids, " "), nil
}

// discoveryQuiet is the discovery run's quiet phase, once every fault has
// healed: it waits until the killed processes' sessions are gone and three
// session timeouts have passed, reads
// the server's listing until it is the live processes (a session timeout
// and then some: a replacement may still be registering), records it, and
// asks every live contender for its final comparison.
func (r *run) discoveryQuiet() {
	quiet := time.Now()
	r.waitDeadSessions()
	// The contenders go on looking for three session timeouts with no
	// fault at all: past every window of doubt, what they see is judged
	// in full (and the killed processes' deadlines pass).
	time.Sleep(time.Until(quiet.Add(3 * r.cfg.SessionTimeout)))
	r.mu.Lock()
	live := slices.Clone(r.live)
	r.mu.Unlock()
	want := make([]string, len(live))
	for i, p := range live {
		want[i] = p.id
	}
	slices.Sort(want)
	path := framework.Join("/chaos/"+string(r.cfg.Recipe), discoveryService)
	var got string
	var err error
	for deadline := time.Now().Add(3*r.cfg.SessionTimeout + 20*time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err = serviceListing(ctx, r.operator, path)
		cancel()
		if (err == nil && got == strings.Join(want, " ")) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // a replacement registering, a session expiring
	}
	if err != nil {
		r.violate("harness", "reading %s once quiet: %v", path, err)
	}
	r.record(Event{Kind: KindDiscoveryServer, Detail: got})
	for _, p := range live {
		_, _ = fmt.Fprintln(p.stdin, "final")
	}
	for _, p := range live {
		select {
		case <-p.finalled:
		case <-p.exited:
			r.violate("harness", "%s exited before its final comparison", p.id)
		case <-time.After(90 * time.Second):
			r.violate("stuck", "%s did not report its final comparison within 90s", p.id)
		}
	}
}

// DiscoveryStats are a discovery run's numbers.
type DiscoveryStats struct {
	// Views counts the current views reported; Stale how often a cache
	// went stale.
	Views, Stale int
	// GhostJudged counts (view, killed instance) pairs past the instance's
	// deadline, in a view of an observer no fault touched: each had to leave
	// the instance out. MissingJudged counts (view, live instance) pairs
	// in which neither the observer nor the instance had a fault for the
	// window: each had to list it.
	GhostJudged, MissingJudged int
	// Kills, registrations made again (a new node after the first) and
	// final comparisons.
	Kills, Reregistrations, Finals int
	// LongestListedAfterKill is the longest a killed instance stayed in
	// some current view after its kill.
	LongestListedAfterKill time.Duration
	// Server is the server's listing once quiet.
	Server string
}

type span struct{ from, to int64 }

func overlaps(ss []span, from, to int64) bool {
	for _, s := range ss {
		if s.from <= to && s.to >= from {
			return true
		}
	}
	return false
}

// CheckDiscovery checks a discovery run's history (see the comment at the
// top of this file). The margin over the session timeout is one more
// session timeout: the window is 2 x sessionTimeout.
func CheckDiscovery(history []Event, sessionTimeout time.Duration) (*Report, DiscoveryStats) {
	r := &Report{Losses: map[string]int{}, Faults: map[string]int{}, NotGranted: map[string]int{}}
	var s DiscoveryStats
	w := int64(2 * sessionTimeout)
	history = slices.Clone(history)
	slices.SortStableFunc(history, func(a, b Event) int { return cmp.Compare(a.T, b.T) })

	// What the harness knows: who started, who registered when, who was
	// killed when, and when faults touched whom.
	started := map[string]int64{}
	registered := map[string]int64{}
	killed := map[string]int64{}
	czxids := map[string]int64{}
	var global []span
	touched := map[string][]span{}
	type open struct {
		target string
		from   int64
	}
	var pending *open
	closeAt := func(to int64) {
		sp := span{pending.from, to}
		if strings.HasPrefix(pending.target, "server") || pending.target == "ensemble" {
			global = append(global, sp)
		} else {
			touched[pending.target] = append(touched[pending.target], sp)
		}
		pending = nil
	}
	stopped := map[string]int64{}
	quiesce := int64(0)
	for _, e := range history {
		switch e.Kind {
		case KindStart:
			if _, ok := started[e.Client]; !ok {
				started[e.Client] = e.T
			}
		case KindDiscoveryPlace:
			if e.Accepted {
				if _, ok := registered[e.Client]; !ok {
					registered[e.Client] = e.T
				} else if czxids[e.Client] != e.Token {
					s.Reregistrations++
				}
				czxids[e.Client] = e.Token
			}
		case KindKill:
			killed[e.Client] = e.T
			s.Kills++
		case KindFault:
			r.Faults[strings.Fields(e.Detail + " ?")[0]]++
			// One fault at a time: one without a heal (a cut, a kill, a
			// delete) is over when the next begins; count it an instant.
			if pending != nil {
				closeAt(pending.from)
			}
			pending = &open{e.Client, e.T}
		case KindHeal:
			if pending != nil && pending.target == e.Client {
				closeAt(e.T)
			}
		case KindSteer:
			touched[e.Client] = append(touched[e.Client], span{e.T, e.T})
		case KindStop:
			stopped[e.Client] = e.T
		case KindCont:
			touched[e.Client] = append(touched[e.Client], span{stopped[e.Client], e.T})
		case KindQuiesce:
			if quiesce == 0 {
				quiesce = e.T
			}
		case KindDiscoveryStale:
			s.Stale++
		}
	}
	if pending != nil {
		closeAt(pending.from)
	}
	if quiesce == 0 {
		quiesce = 1<<63 - 1
	}
	calm := func(c string, t int64) bool {
		return !overlaps(global, t-w, t) && !overlaps(touched[c], t-w, t)
	}
	// A killed process's deadline: a window after its kill, and after the
	// end of every ensemble fault that began before the deadline (a new
	// leader gives its session a fresh timeout).
	deadline := map[string]int64{}
	for k, tk := range killed {
		dl := tk + w
		for changed := true; changed; {
			changed = false
			for _, g := range global {
				if g.from <= dl && g.to >= tk && g.to+w > dl {
					dl, changed = g.to+w, true
				}
			}
		}
		deadline[k] = dl
	}
	liveAt := func(t int64) []string {
		var out []string
		for c, st := range started {
			if tk, ok := killed[c]; st <= t && (!ok || tk > t) {
				out = append(out, c)
			}
		}
		slices.Sort(out)
		return out
	}
	// compare reports what a listing that must be exactly the live
	// processes has too many and too few of.
	compare := func(who string, t int64, ids string) {
		live := liveAt(t)
		got := strings.Fields(ids)
		for _, id := range got {
			if !slices.Contains(live, id) {
				r.violate("discovery-ghost", "%s, once quiet, lists %s, which is not a live process (live: [%s])", who, id, strings.Join(live, " "))
			}
		}
		for _, id := range live {
			if !slices.Contains(got, id) {
				r.violate("discovery-missing", "%s, once quiet, does not list %s, a live process (listed: [%s])", who, id, ids)
			}
		}
	}

	ghosts := map[string]int{}  // observer+" "+killed: views past the deadline
	missing := map[string]int{} // observer+" "+absent
	firstSeen := map[string]string{}
	servers := 0
	for _, e := range history {
		switch e.Kind {
		case KindDiscoveryServer:
			servers++
			s.Server = e.Detail
			compare("the server", e.T, e.Detail)
		case KindDiscoveryFinal:
			s.Finals++
			if !e.Accepted {
				r.violate("discovery-stale-after-quiesce", "%s: %s", e.Client, e.Detail)
				continue
			}
			compare(e.Client+"'s final view", e.T, e.Detail)
		case KindDiscoveryView:
			s.Views++
			ids := strings.Fields(e.Detail)
			for _, id := range ids {
				if _, ok := started[id]; !ok {
					r.violate("discovery-ghost", "%s's current view lists %s, which no process registered", e.Client, id)
					continue
				}
				if tk, ok := killed[id]; ok && e.T > tk {
					if d := time.Duration(e.T - tk); d > s.LongestListedAfterKill {
						s.LongestListedAfterKill = d
					}
				}
			}
			for k, tk := range killed {
				if e.T <= deadline[k] || !calm(e.Client, e.T) {
					continue
				}
				s.GhostJudged++
				if !slices.Contains(ids, k) {
					continue
				}
				key := e.Client + " " + k
				if ghosts[key]++; ghosts[key] == 1 {
					firstSeen[key] = fmt.Sprintf("%s's current view lists %s %s after its kill (deadline %s after it; no fault on %s or the ensemble for %s)",
						e.Client, k, time.Duration(e.T-tk).Round(time.Millisecond), time.Duration(deadline[k]-tk).Round(time.Millisecond), e.Client, time.Duration(w))
				}
			}
			// Views after the quiesce are left out: every contender
			// unregisters as it stops.
			if e.T >= quiesce || !calm(e.Client, e.T) {
				continue
			}
			for _, y := range liveAt(e.T) {
				reg, ok := registered[y]
				if !ok || reg+w > e.T || !calm(y, e.T) {
					continue
				}
				s.MissingJudged++
				if slices.Contains(ids, y) {
					continue
				}
				key := e.Client + " " + y
				if missing[key]++; missing[key] == 1 {
					firstSeen[key] = fmt.Sprintf("%s's current view does not list %s, registered %s before and live, with no fault on either or on the ensemble for %s (listed: [%s])",
						e.Client, y, time.Duration(e.T-reg).Round(time.Millisecond), time.Duration(w), e.Detail)
				}
			}
		}
	}
	report := func(kind string, m map[string]int) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			more := ""
			if m[k] > 1 {
				more = fmt.Sprintf(" (and %d more such views)", m[k]-1)
			}
			r.violate(kind, "%s%s", firstSeen[k], more)
		}
	}
	report("discovery-ghost", ghosts)
	report("discovery-missing", missing)
	if s.Views == 0 {
		r.violate("no-progress", "no contender's cache was ever current")
	}
	if servers == 0 {
		r.violate("no-progress", "the server's listing was not read once quiet")
	}
	if s.Finals == 0 {
		r.violate("no-progress", "no contender made its final comparison")
	}
	return r, s
}

// finishDiscovery checks the run and writes its files: discovery's end of
// Run.
func (r *run) finishDiscovery(history []Event) *Result {
	r.t.Helper()
	rep, s := CheckDiscovery(history, r.cfg.SessionTimeout)
	r.addRunFindings(rep)
	var b strings.Builder
	fmt.Fprintf(&b, "chaos %s: seed %d, %d contenders, session timeout %s, %s\n",
		r.cfg.Recipe, r.cfg.Seed, r.cfg.Contenders, r.cfg.SessionTimeout, time.Since(r.started).Round(time.Second))
	fmt.Fprintf(&b, "  current views reported %d; caches went stale %d times; registrations made again %d\n", s.Views, s.Stale, s.Reregistrations)
	fmt.Fprintf(&b, "  kills %d; a killed instance stayed listed in a current view at most %s after its kill\n", s.Kills, s.LongestListedAfterKill.Round(time.Millisecond))
	fmt.Fprintf(&b, "  judged: %d (view, killed instance past its deadline) pairs, %d (view, live undisturbed instance) pairs\n", s.GhostJudged, s.MissingJudged)
	fmt.Fprintf(&b, "  once quiet: the server lists [%s]; %d final comparisons\n", s.Server, s.Finals)
	fmt.Fprintf(&b, "  faults: %s\n", counts(rep.Faults))
	writeViolations(&b, rep)
	res := &Result{Config: r.cfg, Report: rep, Summary: b.String()}
	r.writeFiles(history, res)
	return res
}
