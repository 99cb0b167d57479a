package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Fault is one kind of trouble the nemesis makes.
type Fault string

// The faults. "Holder" faults aim at a contender that holds at that moment.
const (
	// KillHolder and KillWaiter: kill -9 of the process; a fresh contender
	// takes its place.
	KillHolder Fault = "kill-holder"
	KillWaiter Fault = "kill-waiter"
	// PauseHolder: SIGSTOP for 2.5 session timeouts, then SIGCONT: the GC
	// pause in which the session expires and someone else is granted.
	PauseHolder Fault = "pause-holder"
	// CutHolder: the holder's TCP links are reset.
	CutHolder Fault = "cut-holder"
	// BlackholeShort drops the holder's traffic for half a session timeout
	// (the session survives); BlackholeLong for two (it expires).
	BlackholeShort Fault = "blackhole-short"
	BlackholeLong  Fault = "blackhole-long"
	// RestartServer restarts one server gracefully.
	RestartServer Fault = "restart-server"
	// KillLeader kills the ensemble's leader with SIGKILL and starts it
	// again a session timeout later.
	KillLeader Fault = "kill-leader"
	// SlowLink delays a contender's traffic by 50-300ms for three seconds.
	SlowLink Fault = "slow-link"
	// RequestsDropped drops what the holder sends for two session timeouts
	// while what the servers send still reaches it (one-way: its session
	// expires); RepliesDropped drops what the servers send it for one
	// session timeout while its pings still arrive (the other way: its
	// session lives on).
	RequestsDropped Fault = "requests-dropped"
	RepliesDropped  Fault = "replies-dropped"
	// DeleteNode deletes the holder's node from outside, as an operator's
	// deleteall or a buggy client would: the holder must stop trusting its
	// hold at once.
	DeleteNode Fault = "delete-node"
	// PartitionLeader cuts the leader off from both followers, on the
	// quorum and the election ports, for one and a half session timeouts;
	// its clients may move to the majority. PartitionFollower does it to
	// one follower. PartitionLeaderClient cuts the leader off for two and
	// a half session timeouts together with one contender's links to the
	// followers: that contender stays on the minority side, and its
	// session expires there.
	PartitionLeader       Fault = "partition-leader"
	PartitionFollower     Fault = "partition-follower"
	PartitionLeaderClient Fault = "partition-leader-client"
	// RollingRestart restarts every server gracefully in turn, the
	// followers first, each once the ensemble serves again.
	RollingRestart Fault = "rolling-restart"
	// KillServer kills a server with clients on it with SIGKILL and starts
	// it again at once, from its snapshot and transaction log.
	KillServer Fault = "kill-server"
	// LagFollower delays everything the leader sends a follower with
	// clients on it by 200-600ms for one and a half session timeouts: the
	// follower stays in the quorum, and its clients read the past.
	LagFollower Fault = "lag-follower"
	// StallWrite holds a trusted holder's next multi (its fenced write,
	// sent after every local check passed) at its proxy, deletes the
	// hold's node meanwhile, and then lets the write go on: only the
	// server-side check of Hold.Fenced stands between it and the register.
	// Recipes whose holds write no register skip it.
	StallWrite Fault = "stall-write"
)

// AllFaults is every fault kind.
var AllFaults = []Fault{KillHolder, KillWaiter, PauseHolder, CutHolder, BlackholeShort, BlackholeLong, RestartServer, KillLeader, SlowLink, RequestsDropped, RepliesDropped, DeleteNode,
	PartitionLeader, PartitionFollower, PartitionLeaderClient, RollingRestart, KillServer, LagFollower, StallWrite}

// nemesis injects faults one at a time, with a quiet gap between them, until
// the run's duration is over and every kind has had its turn. It runs on
// the test's goroutine: the harness may fail the test.
func (r *run) nemesis() {
	kinds := append([]Fault(nil), r.cfg.Faults...)
	// The latch's leader whose node is deleted must queue anew, never lead
	// again on what it saw before: twice a run (see deleteTarget).
	if r.cfg.Recipe == Latch && slices.Contains(kinds, DeleteNode) {
		kinds = append(kinds, DeleteNode)
	}
	r.sched.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	deadline := r.started.Add(r.cfg.Duration)
	for i := 0; i < len(kinds) || time.Now().Before(deadline); i++ {
		time.Sleep(500*time.Millisecond + time.Duration(r.sched.IntN(1000))*time.Millisecond) // quiet time between faults
		f := r.cfg.Faults[r.sched.IntN(len(r.cfg.Faults))]
		if i < len(kinds) {
			f = kinds[i]
		}
		r.inject(f)
	}
}

func (r *run) inject(f Fault) {
	r.t.Helper()
	st := r.cfg.SessionTimeout
	fault := func(target string) {
		r.mu.Lock()
		_, holding := r.holding[target]
		r.mu.Unlock()
		what := ""
		if holding {
			what = " (holding)"
		}
		r.record(Event{Kind: KindFault, Client: target, Detail: string(f) + " " + target + what})
	}
	heal := func(target string) { r.record(Event{Kind: KindHeal, Client: target, Detail: string(f) + " " + target}) }
	if r.ensembleFault(f) {
		return
	}
	switch f {
	case KillHolder, KillWaiter:
		p := r.waiter()
		if f == KillHolder {
			p, _ = r.holder()
		}
		fault(p.id)
		r.kill(p)
	case PauseHolder:
		p := r.freeze()
		fault(p.id)
		r.mu.Lock()
		sessions := slices.Clone(p.sessions)
		r.mu.Unlock()
		time.Sleep(st * 5 / 2)
		// Whether the session outlived the pause, from the servers: the
		// checker ends a hold at the freeze only if it did not.
		detail := "alive"
		if len(sessions) > 0 && !r.env.Cluster.SessionAlive(sessions[len(sessions)-1]) {
			detail = "expired"
		}
		r.record(Event{Kind: KindCont, Client: p.id, Detail: detail})
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		heal(p.id)
	case CutHolder:
		p, _ := r.longHolder()
		fault(p.id)
		r.proxies[p.slot].Cut()
	case BlackholeShort, BlackholeLong:
		p, _ := r.longHolder()
		fault(p.id)
		r.proxies[p.slot].Blackhole()
		if f == BlackholeShort {
			time.Sleep(st / 2)
		} else {
			time.Sleep(2 * st)
		}
		r.proxies[p.slot].Heal()
		heal(p.id)
	case RestartServer:
		servers := r.env.Cluster.Servers()
		s := servers[r.rng.IntN(len(servers))]
		fault(fmt.Sprintf("server%d", s.ID))
		s.Restart()
		heal(fmt.Sprintf("server%d", s.ID))
	case KillLeader:
		s := r.env.Cluster.Leader(30 * time.Second)
		fault(fmt.Sprintf("server%d", s.ID))
		s.Kill()
		time.Sleep(st)
		s.Start()
		heal(fmt.Sprintf("server%d", s.ID))
	case RequestsDropped, RepliesDropped:
		p, _ := r.longHolder()
		fault(p.id)
		if f == RequestsDropped {
			r.proxies[p.slot].DropRequests()
			time.Sleep(2 * st)
		} else {
			r.proxies[p.slot].DropReplies()
			time.Sleep(st)
		}
		r.proxies[p.slot].Heal()
		heal(p.id)
	case DeleteNode:
		p, token, path := r.deleteTarget()
		if path == "" {
			// Not "(holding)": nothing was deleted, so no hold ends here
			// and nobody has anything to learn.
			r.record(Event{Kind: KindFault, Client: p.id, Detail: string(f) + " " + p.id + ": nothing to delete"})
			return
		}
		// Recorded before the delete, with the hold's token: the checker
		// ends that hold here if, and only if, a KindDeleted proves the
		// delete.
		r.record(Event{Kind: KindFault, Client: p.id, Token: token, Detail: string(f) + " " + p.id + " " + path + " (holding)"})
		r.deleteHeld(p, token, path)
	case StallWrite:
		// A stall that caught no write of the hold it aimed at proves
		// nothing: try again, a few times, with whoever holds then.
		for try := 0; try < 5 && r.cfg.Recipe.writesRegister(); try++ {
			p, _ := r.holder()
			if r.stallWrite(p) {
				break
			}
		}
	case SlowLink:
		p := r.any()
		d := 50*time.Millisecond + time.Duration(r.rng.IntN(250))*time.Millisecond
		fault(p.id)
		r.proxies[p.slot].Delay(d)
		time.Sleep(3 * time.Second)
		r.proxies[p.slot].Heal()
		heal(p.id)
	default:
		r.t.Fatalf("chaos: unknown fault %q", f)
	}
}

// freeze stops a holder between a trust check and the write that follows
// it: asked to, a contender stops itself there (see contender.work) and
// says so first. A holder whose hold ends before its next check is let off
// ("nofreeze", which it acknowledges unless it was already stopping) and
// another one tried. Only after many tries (a short run may have one pause
// fault, and CI requires it to produce a stale write) is the last one
// stopped from outside, wherever it is. KindStop is stamped once the kernel
// says it is stopped.
func (r *run) freeze() *proc {
	var p *proc
	giveUp := time.Now().Add(30 * time.Second)
	for try := 0; try < 20 && time.Now().Before(giveUp); try++ {
		p, _ = r.holder()
		drain(p.freeze)
		_, _ = io.WriteString(p.stdin, "freeze\n")
		answer := KindNoFreeze
		select {
		case answer = <-p.freeze:
		case <-time.After(time.Second):
			_, _ = io.WriteString(p.stdin, "nofreeze\n")
			select {
			case answer = <-p.freeze:
			case <-p.exited:
			case <-time.After(10 * time.Second):
				r.violate("harness", "%s answered neither freeze nor nofreeze", p.id)
			}
		case <-p.exited:
		}
		if answer == KindFreezing {
			if !waitStopped(p.cmd.Process.Pid, 5*time.Second) {
				r.violate("harness", "%s said it was stopping and did not", p.id)
			}
			r.record(Event{Kind: KindStop, Client: p.id})
			return p
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGSTOP)
	if !waitStopped(p.cmd.Process.Pid, 5*time.Second) {
		r.violate("harness", "%s did not stop", p.id)
	}
	r.record(Event{Kind: KindStop, Client: p.id})
	return p
}

// stallWrite is the StallWrite fault on p (see its doc). The hold's node
// is found before the stall is armed, so that what the stall holds (pings
// too) is held only for the one request the delete is.
func (r *run) stallWrite(p *proc) (deleted bool) {
	nothing := func(why string) {
		r.record(Event{Kind: KindFault, Client: p.id, Detail: string(StallWrite) + " " + p.id + ": " + why})
	}
	r.mu.Lock()
	token, holding := r.tokens[p.id]
	r.mu.Unlock()
	if !holding {
		nothing("nobody held")
		return false
	}
	path, err := r.nodeWithToken(token)
	if err != nil || path == "" {
		nothing("its hold ended")
		return false
	}
	proxy := r.proxies[p.slot]
	defer proxy.Heal()
	proxy.StallRequestsFrom(zktest.OpMulti)
	// A holder writes every 50-180 ms while it holds: a second is plenty,
	// and a holder that sends none has released.
	for deadline := time.Now().Add(time.Second); !proxy.Stalled(); {
		if time.Now().After(deadline) {
			nothing("no write came")
			return false
		}
		time.Sleep(2 * time.Millisecond) // polling the proxy
	}
	struck := time.Now()
	// Recorded before the delete, with the hold's token: the checker ends
	// that hold here if, and only if, a KindDeleted proves the delete.
	r.record(Event{Kind: KindFault, Client: p.id, Token: token, Detail: string(StallWrite) + " " + p.id + " " + path + " (holding)"})
	deleted = r.deleteHeld(p, token, path)
	proxy.Release()
	// The stall must stay well under the loss signal's bound (two thirds
	// of the session timeout without a reply), or the client drops the
	// link and the held write with it; the heal says how long it was.
	r.record(Event{Kind: KindHeal, Client: p.id, Detail: fmt.Sprintf("%s %s after %s", StallWrite, p.id, time.Since(struck).Round(time.Millisecond))})
	return deleted
}

// deleteHeld deletes the node of p's hold with token from outside, as an
// operator would, in a multi that also sets the run's marker node to a
// value of this delete's own: the reply's stat of the marker says the
// delete's zxid, and when the reply is lost the marker says whether the
// multi was applied. Only a delete so proven is recorded (KindDeleted):
// the checkers end a hold, and ask its holder to learn, on nothing less.
func (r *run) deleteHeld(p *proc, token int64, path string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mark := []byte(fmt.Sprintf("%s %d %d", path, token, now()))
	res, err := r.operator.MultiOnce(ctx, &zk.DeleteRequest{Path: path, Version: -1}, &zk.SetDataRequest{Path: markerPath, Data: mark, Version: -1})
	var me *framework.MultiOpError
	var zxid int64
	switch {
	case err == nil && len(res) == 2 && res[1].Stat != nil:
		zxid = res[1].Stat.Mzxid
	case errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, zk.ErrNoNode):
		return false // released meanwhile: nothing was deleted
	case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
		// Applied or not, the marker says: read it once the servers agree.
		if err := r.operator.Sync(ctx, markerPath); err != nil {
			r.violate("harness", "delete %s: outcome unknown, and the marker's sync: %v", path, err)
			return false
		}
		data, st, err := r.operator.Get(ctx, markerPath)
		if err != nil {
			r.violate("harness", "delete %s: outcome unknown, and the marker's read: %v", path, err)
			return false
		}
		if string(data) != string(mark) {
			return false // not applied
		}
		zxid = st.Mzxid
	default:
		r.violate("harness", "delete %s: %v", path, err)
		return false
	}
	r.record(Event{Kind: KindDeleted, Client: p.id, Token: token, Zxid: zxid, Detail: path})
	return true
}

// markerPath is a node the nemesis sets in the multi of each delete it
// makes, so the reply says the delete's zxid.
const markerPath = "/chaos-marker"

// deleteTarget picks the holder whose node delete-node deletes, and the
// node; an empty path when there is none. For the latch it looks, for up
// to 20 s, for a leader whose latch stays in the election when the term
// is lost (Event.Keep): only such a latch re-checks its node before it
// leads again, the check a stale view would skip, and a leader that
// closes its latch would hide it.
func (r *run) deleteTarget() (*proc, int64, string) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, _ := r.holder()
		r.mu.Lock()
		token, holding := r.tokens[p.id]
		keep := p.keep
		r.mu.Unlock()
		if holding && (r.cfg.Recipe != Latch || keep) {
			if path, err := r.nodeWithToken(token); err == nil && path != "" {
				return p, token, path
			}
		}
		if r.cfg.Recipe != Latch || time.Now().After(deadline) {
			return p, 0, ""
		}
		time.Sleep(20 * time.Millisecond) // polling the live view
	}
}

// nodeWithToken finds the node under the recipe's path whose czxid is
// token: a hold's node (its token is its czxid).
func (r *run) nodeWithToken(token int64) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	found := ""
	err := walk(ctx, r.operator, "/chaos/"+string(r.cfg.Recipe), func(p string, st *zk.Stat) {
		if st.Czxid == token {
			found = p
		}
	})
	return found, err
}

func drain(c chan Kind) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// waitStopped polls /proc until pid is in the stopped state.
func waitStopped(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// The state follows the ")" closing the command name.
		if i := bytes.LastIndexByte(b, ')'); err == nil && i >= 0 && i+2 < len(b) && b[i+2] == 'T' {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond) // polling the kernel's view
	}
}

// summarize is the run's report for people.
func summarize(cfg Config, rep *Report, took time.Duration) string {
	if cfg.Recipe == Atomic {
		return summarizeAtomic(cfg, rep, took)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "chaos %s: seed %d, %d contenders, session timeout %s, %s\n",
		cfg.Recipe, cfg.Seed, cfg.Contenders, cfg.SessionTimeout, took.Round(time.Second))
	if rep.Countdown != nil {
		summarizeCountdown(&b, rep)
		return b.String()
	}
	ends := map[string]int{}
	for _, h := range rep.Holds {
		ends[h.EndedBy]++
	}
	fmt.Fprintf(&b, "  asks %d: granted %d, %s\n", rep.Asks, rep.Grants, counts(rep.NotGranted))
	fmt.Fprintf(&b, "  grants %d, ended by %s (granted before a freeze and reported after the thaw: %d); longest wait for a grant %s\n", rep.Grants, counts(ends), rep.ReportedAfterThaw, rep.MaxGap.Round(time.Millisecond))
	fmt.Fprintf(&b, "  loss signals: %s\n", counts(rep.Losses))
	fmt.Fprintf(&b, "  faults: %s; %d hit a holder\n", counts(rep.Faults), rep.FaultsOnHolder)
	fmt.Fprintf(&b, "  holds on a server a partition cut off: %d\n", rep.MinorityHolds)
	if cfg.Recipe != Semaphore {
		fmt.Fprintf(&b, "  fenced writes %d, taken %d; stale %d (refused %d, taken before the newer holder wrote %d; from thawed SIGSTOP holders %d); an unfenced register would have taken all %d stale\n",
			rep.Writes, rep.Accepted, rep.Stale, rep.StaleFenced, rep.LateTaken, rep.StaleFrozen, rep.Stale)
		fmt.Fprintf(&b, "  grants to others while a thawed holder still believed it held: %d\n", rep.FrozenOverlap)
	}
	if cfg.Recipe != Selector {
		fmt.Fprintf(&b, "  fenced ZooKeeper register (hold.Fenced): %d writes committed, checked in zxid order (non-holder or stale: %d); refused as the hold was lost %d, outcome unknown %d, other errors %d\n",
			rep.RegisterWrites, rep.ViolationsByKind()["register-non-holder"]+rep.ViolationsByKind()["register-stale-write"],
			rep.RegisterRefused, rep.RegisterUnknown, rep.RegisterFailed)
		fmt.Fprintf(&b, "  writes held by stall-write while their hold's node was deleted: %d\n", rep.StalledWrites)
	}
	if cfg.Recipe == Latch {
		fmt.Fprintf(&b, "  terms led again with the same node after a loss signal: %d\n", rep.Releads)
	}
	fmt.Fprintf(&b, "  linearizable (porcupine, %s model): %s\n", cfg.Recipe, rep.Linearizable)
	writeViolations(&b, rep)
	return b.String()
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if name == "" {
			name = "-"
		}
		parts[i] = fmt.Sprintf("%s=%d", name, m[k])
	}
	return strings.Join(parts, " ")
}

func porcupineVisualize(rep *Report, path string) error {
	return porcupine.VisualizePath(rep.model, rep.info, path)
}

// writeViolations ends a summary: none, or their counts and the first 20.
func writeViolations(b *strings.Builder, rep *Report) {
	for _, s := range rep.ServerBugs {
		fmt.Fprintf(b, "  ZooKeeper's own (not counted): %s\n", s)
	}
	if len(rep.Violations) == 0 {
		b.WriteString("  violations: none\n")
		return
	}
	fmt.Fprintf(b, "  violations: %s\n", counts(rep.ViolationsByKind()))
	for i, v := range rep.Violations {
		if i == 20 {
			fmt.Fprintf(b, "    ... %d more in violations.txt\n", len(rep.Violations)-20)
			break
		}
		fmt.Fprintf(b, "    %s: %s\n", v.Kind, v.Detail)
	}
}
