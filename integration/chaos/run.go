package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Config is one run: one recipe, its contenders, the nemesis.
type Config struct {
	Recipe Recipe
	// Contenders is how many contender processes run at once (default 5).
	Contenders int
	// Duration is how long the nemesis keeps going; it always finishes a
	// first pass over every fault kind, in an order the seed shuffles.
	Duration time.Duration
	// SessionTimeout is the contenders' session timeout (default 2s).
	SessionTimeout time.Duration
	// Seed fixes the order of fault kinds and the gaps between them; which
	// contender a fault hits depends on timing.
	Seed uint64
	// MaxLeases is the semaphore's maximum (default 2).
	MaxLeases int
	// Faults are the fault kinds to inject (default: AllFaults).
	Faults []Fault
	// OutDir receives history.jsonl, summary.txt, violations.txt,
	// linearizability.html and the contenders' logs (default: a temporary
	// directory of the test).
	OutDir string
}

// Env is what runs share: the ensemble and the fenced resource.
type Env struct {
	Cluster *zktest.Cluster
	Fence   *Fence
	// Exe is the binary to start contenders from: a test binary whose
	// TestMain runs RunContender when IsContender.
	Exe string
}

// Result is a finished run.
type Result struct {
	Config  Config
	Report  *Report
	Summary string
}

type proc struct {
	id       string
	slot     int
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	exited   chan struct{}
	idle     chan struct{}
	finalled chan struct{} // closed at its first KindDiscoveryFinal
	freeze   chan Kind     // answers to "freeze" and "nofreeze"
	killed   bool
	sessions []int64 // every session it reported (guarded by run.mu)
	own      []int64 // the sessions its client was on, in order (start and session events)
	keep     bool    // its last grant's Event.Keep (guarded by run.mu)
}

type run struct {
	t       testing.TB
	env     Env
	cfg     Config
	rng     *rand.Rand // targets and contender seeds: how they are used depends on timing
	sched   *rand.Rand // fault kinds and gaps: the same for the same seed
	proxies []*zktest.Proxy
	wg      sync.WaitGroup // contenders' readers and waiters
	started time.Time

	mu      sync.Mutex
	history []Event
	procs   []*proc              // every process ever started
	live    []*proc              // by slot
	holding map[string]int64     // client -> session of its trusted hold
	tokens  map[string]int64     // client -> token of its trusted hold
	since   map[string]time.Time // client -> when its trusted hold was reported
	// operator is the nemesis's own client, for faults made with requests.
	operator *framework.Client
	next     int
	extra    []Violation
	// serverBugs: what ZooKeeper's own replicas got wrong through a known
	// bug of the server, reported beside the violations, not among them.
	serverBugs []string
	marks      map[int]int64 // server ID -> its log's size when the run began
}

// Run runs one chaos run and checks it. It fails t only for harness
// trouble; the caller decides what to do with the report's violations.
func Run(t testing.TB, env Env, cfg Config) *Result {
	t.Helper()
	if cfg.Contenders <= 0 {
		cfg.Contenders = 5
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 2 * time.Second
	}
	if cfg.MaxLeases <= 0 {
		cfg.MaxLeases = 2
	}
	if len(cfg.Faults) == 0 {
		cfg.Faults = AllFaults
	}
	if cfg.OutDir == "" {
		cfg.OutDir = t.TempDir()
	}
	if err := os.MkdirAll(filepath.Join(cfg.OutDir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	env.Fence.Reset()
	octx, ocancel := context.WithTimeout(context.Background(), 30*time.Second)
	operator, err := framework.Dial(octx, env.Cluster.DirectAddrs(), framework.WithSessionTimeout(10*time.Second))
	ocancel()
	if err != nil {
		t.Fatalf("chaos: the nemesis's client: %v", err)
	}
	defer operator.Close()
	r := &run{operator: operator, t: t, env: env, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)), sched: rand.New(rand.NewPCG(cfg.Seed, 0x5c4ed)), holding: map[string]int64{}, tokens: map[string]int64{}, since: map[string]time.Time{}, started: time.Now()}
	t.Cleanup(r.killAll)
	if cfg.Recipe == Atomic {
		r.resetCounter()
	}
	if cfg.Recipe.writesRegister() {
		rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := operator.Create(rctx, r.registerPath(), nil, framework.WithParents())
		rcancel()
		if err != nil {
			t.Fatalf("chaos: the register %s: %v", r.registerPath(), err)
		}
	}
	mctx, mcancel := context.WithTimeout(context.Background(), 30*time.Second)
	if _, err := operator.Create(mctx, markerPath, nil); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		mcancel()
		t.Fatalf("chaos: the marker %s: %v", markerPath, err)
	}
	mcancel()
	r.markServers()
	for i := 0; i < cfg.Contenders; i++ {
		r.proxies = append(r.proxies, env.Cluster.NewProxy())
		r.live = append(r.live, r.spawn(i))
	}
	r.nemesis()
	r.quiesce()
	r.wg.Wait()
	r.checkServers()

	r.mu.Lock()
	history := append(r.history, env.Fence.Writes()...)
	r.mu.Unlock()
	sort.SliceStable(history, func(i, j int) bool { return history[i].T < history[j].T })
	if cfg.Recipe == Barrier {
		return r.finishBarrier(history)
	}
	if cfg.Recipe == SharedCount {
		return r.finishShared(history)
	}
	if cfg.Recipe == Cache {
		return r.finishCache(history)
	}
	if cfg.Recipe == Partition {
		return r.finishPartition(history)
	}
	if cfg.Recipe == Discovery {
		return r.finishDiscovery(history)
	}
	var rep *Report
	switch cfg.Recipe {
	case Atomic:
		rep = r.checkCounter(history)
	case Countdown:
		rep = CheckCountdown(history, countdownCount)
	default:
		var entries []RegisterEntry
		if cfg.Recipe.writesRegister() {
			rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Minute)
			entries, err = readRegister(rctx, operator, r.registerPath())
			rcancel()
			if err != nil {
				t.Fatalf("chaos: reading the register %s: %v", r.registerPath(), err)
			}
		}
		check := func(drop map[int64]bool) *Report {
			h := withoutHolds(history, drop)
			rep := Check(cfg.Recipe, cfg.MaxLeases, cfg.SessionTimeout, h)
			if cfg.Recipe.writesRegister() {
				rep.CheckRegister(cfg.Recipe, h, withoutEntries(entries, drop))
			}
			return rep
		}
		rep = check(nil)
		attribute(rep, r.replicas, holdTokens(history), func(drop map[int64]bool) []Violation { return check(drop).Violations })
	}
	r.addRunFindings(rep)
	res := &Result{Config: cfg, Report: rep, Summary: summarize(cfg, rep, time.Since(r.started))}
	r.save(history, res)
	return res
}

// addRunFindings adds to rep what the run itself found beside its
// checker: the harness's violations, and ZooKeeper's own divergence.
func (r *run) addRunFindings(rep *Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep.Violations = append(rep.Violations, r.extra...)
	rep.ServerBugs = append(rep.ServerBugs, r.serverBugs...)
}

// replicas reads every server's data directory.
func (r *run) replicas() []*replica {
	var out []*replica
	for _, s := range r.env.Cluster.Servers() {
		out = append(out, readReplica(s.ID, s.SnapshotDir()))
	}
	return out
}

func (r *run) record(e Event) {
	if e.T == 0 {
		e.T = now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, e)
}

func (r *run) violate(kind, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.extra = append(r.extra, Violation{Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// spawn starts a contender in slot behind the slot's own proxy.
func (r *run) spawn(slot int) *proc {
	r.t.Helper()
	r.mu.Lock()
	r.next++
	id := fmt.Sprintf("c%d", r.next)
	r.mu.Unlock()
	spec := Spec{
		Recipe: r.cfg.Recipe, Servers: r.proxies[slot].Addrs(), Path: "/chaos/" + string(r.cfg.Recipe),
		ID: id, SessionTimeout: r.cfg.SessionTimeout, MaxLeases: r.cfg.MaxLeases, Seed: r.rng.Uint64(),
	}
	if r.cfg.Recipe != Semaphore {
		spec.Fence = r.env.Fence.URL()
	}
	if r.cfg.Recipe.writesRegister() {
		spec.Register = r.registerPath()
	}
	js, err := json.Marshal(spec)
	if err != nil {
		r.t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(r.cfg.OutDir, "logs", id+".log"))
	if err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command(r.env.Exe)
	// A contender stopped when the orchestrator dies (a test timeout, say)
	// would never see its stdin close; the kernel kills it instead.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), contenderEnv+"="+string(js))
	cmd.Stderr = logf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	p := &proc{id: id, slot: slot, cmd: cmd, stdin: stdin, exited: make(chan struct{}), idle: make(chan struct{}), finalled: make(chan struct{}), freeze: make(chan Kind, 2)}
	r.mu.Lock()
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.read(p, stdout)
		// Wait only after stdout is drained, as os/exec requires.
		_ = cmd.Wait()
		_ = logf.Close()
		close(p.exited)
	}()
	return p
}

// registerPath is the recipe's fenced ZooKeeper register: outside the
// recipe's own path, which must be left empty.
func (r *run) registerPath() string { return "/chaos-register/" + string(r.cfg.Recipe) }

// read takes a contender's events as they come and keeps the live view the
// nemesis aims with.
func (r *run) read(p *proc, out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	idle, finalled := false, false
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			r.violate("harness", "%s wrote a line that is not an event: %q", p.id, sc.Text())
			continue
		}
		r.mu.Lock()
		r.history = append(r.history, e)
		switch e.Kind {
		case KindStart, KindSession:
			p.sessions = append(p.sessions, e.Session)
			p.own = append(p.own, e.Session)
		case KindAcquireOK:
			r.holding[p.id] = e.Session
			r.tokens[p.id] = e.Token
			r.since[p.id] = time.Now()
			p.keep = e.Keep
			// A grant may come under a session the contender has not
			// reported yet: the one the nemesis must ask about is this.
			if n := len(p.sessions); e.Session != 0 && (n == 0 || p.sessions[n-1] != e.Session) {
				p.sessions = append(p.sessions, e.Session)
			}
		case KindLoss, KindReleaseCall:
			delete(r.holding, p.id)
			delete(r.tokens, p.id)
			delete(r.since, p.id)
		case KindDiscoveryPlace:
			// A registration in place is a discovery contender's "hold":
			// holder faults aim at it, delete-node deletes its node (its
			// czxid is the token).
			if e.Accepted {
				r.holding[p.id] = e.Session
				r.tokens[p.id] = e.Token
				if n := len(p.sessions); e.Session != 0 && (n == 0 || p.sessions[n-1] != e.Session) {
					p.sessions = append(p.sessions, e.Session)
				}
			} else {
				delete(r.holding, p.id)
				delete(r.tokens, p.id)
			}
		}
		switch countdownBusy(e) {
		case 1:
			r.holding[p.id] = e.Session
		case -1:
			delete(r.holding, p.id)
		}
		r.mu.Unlock()
		switch e.Kind {
		case KindIdle:
			if !idle {
				idle = true
				close(p.idle)
			}
		case KindDiscoveryFinal:
			if !finalled {
				finalled = true
				close(p.finalled)
			}
		case KindFreezing, KindNoFreeze:
			select {
			case p.freeze <- e.Kind:
			default:
			}
		case KindLeak:
			r.violate("goroutine-leak", "%s: %s", p.id, e.Detail)
		}
	}
	if err := sc.Err(); err != nil {
		r.violate("harness", "%s: reading its events: %v", p.id, err)
		_, _ = io.Copy(io.Discard, out) // never leave it blocked on a full pipe
	}
	r.mu.Lock()
	delete(r.holding, p.id)
	delete(r.tokens, p.id)
	delete(r.since, p.id)
	r.mu.Unlock()
}

// holder returns a live contender that holds now (waiting up to 3s for one),
// or any live one.
func (r *run) holder() (*proc, int64) {
	if p, s, ok := r.pickWithin(3*time.Second, func(p *proc) bool { _, ok := r.holding[p.id]; return ok }); ok {
		return p, s
	}
	return r.any(), 0
}

// longHolder is holder for the link faults whose checks need the hold to
// outlast the loss signal's bound (late-loss-signal): for the lock
// recipes, a holder whose hold was reported at least 800 ms ago, which is
// one of the contenders' long holds (a short one ends within about 750 ms;
// see work). A fault that struck a short hold ended by its release tested
// nothing, and a bug that ends holds late (the standard policy ending them
// only on Lost) went unseen in one run of four. It waits up to 5 s for one,
// then takes any holder.
func (r *run) longHolder() (*proc, int64) {
	if !slices.Contains([]Recipe{Mutex, RWLock, Semaphore, Latch, Selector}, r.cfg.Recipe) {
		return r.holder()
	}
	long := func(p *proc) bool { t, ok := r.since[p.id]; return ok && time.Since(t) >= 800*time.Millisecond }
	if p, s, ok := r.pickWithin(5*time.Second, long); ok {
		return p, s
	}
	return r.holder()
}

// pickWithin returns a live contender that fits (called under r.mu), at
// random, and the session of its hold, polling the live view for up to
// wait; false if none fitted by then.
func (r *run) pickWithin(wait time.Duration, fits func(*proc) bool) (*proc, int64, bool) {
	for deadline := time.Now().Add(wait); ; {
		r.mu.Lock()
		var ps []*proc
		for _, p := range r.live {
			if fits(p) {
				ps = append(ps, p)
			}
		}
		if len(ps) > 0 {
			p := ps[r.rng.IntN(len(ps))]
			s := r.holding[p.id]
			r.mu.Unlock()
			return p, s, true
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			return nil, 0, false
		}
		time.Sleep(20 * time.Millisecond) // polling the live view
	}
}

// waiter returns a live contender that does not hold, or any live one.
func (r *run) waiter() *proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ps []*proc
	for _, p := range r.live {
		if _, ok := r.holding[p.id]; !ok {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		ps = r.live
	}
	return ps[r.rng.IntN(len(ps))]
}

func (r *run) any() *proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live[r.rng.IntN(len(r.live))]
}

// kill kills p with SIGKILL and starts a fresh contender in its slot.
func (r *run) kill(p *proc) {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	// Stamped once it is gone: nothing it did can come after this.
	r.record(Event{Kind: KindKill, Client: p.id})
	r.mu.Lock()
	p.killed = true
	r.mu.Unlock()
	r.proxies[p.slot].Heal()
	np := r.spawn(p.slot)
	r.mu.Lock()
	r.live[p.slot] = np
	r.mu.Unlock()
}

// quiesce heals everything, lets every contender finish and report idle
// with its session still open, then checks that nothing is left under the
// recipe's path: no node of a live session, none of a dead one once its
// session expired. Then the contenders exit, checking themselves for leaked
// goroutines.
func (r *run) quiesce() {
	r.t.Helper()
	for _, p := range r.proxies {
		p.Heal()
	}
	r.env.Cluster.HealPartition()
	for _, s := range r.env.Cluster.Servers() {
		if !s.Running() {
			s.Start()
		}
	}
	r.env.Cluster.WaitServing(time.Minute)
	if r.cfg.Recipe == Discovery {
		r.discoveryQuiet()
	}
	r.record(Event{Kind: KindQuiesce})
	r.mu.Lock()
	live := slices.Clone(r.live)
	r.mu.Unlock()
	for _, p := range live {
		_, _ = io.WriteString(p.stdin, "quiesce\n")
	}
	for _, p := range live {
		select {
		case <-p.idle:
		case <-p.exited:
			r.violate("harness", "%s exited before it was told to", p.id)
		case <-time.After(time.Minute):
			r.violate("stuck", "%s did not go idle within a minute of quiesce", p.id)
		}
	}
	r.waitDeadSessions()
	r.checkLeftovers()
	if r.cfg.Recipe == Barrier {
		r.clearBarriers()
	}
	for _, p := range live {
		_, _ = io.WriteString(p.stdin, "exit\n")
	}
	for _, p := range live {
		select {
		case <-p.exited:
			if code := p.cmd.ProcessState.ExitCode(); code != 0 {
				r.violate("contender-exit", "%s exited with %d (see logs/%s.log)", p.id, code, p.id)
			}
		case <-time.After(30 * time.Second):
			r.violate("stuck", "%s did not exit within 30s", p.id)
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	r.checkEmpty()
}

// waitDeadSessions waits until the sessions of killed contenders, and
// those a live one left behind for a new session, are gone from every
// server, so their ephemeral nodes are too. A session left behind that
// lives on was resumed after the client gave it up: what the client
// abandoned at the loss then never goes.
func (r *run) waitDeadSessions() {
	r.mu.Lock()
	type dead struct {
		id  int64
		why string
	}
	var sessions []dead
	for _, p := range r.procs {
		if p.killed {
			for _, s := range p.sessions {
				sessions = append(sessions, dead{s, "of a killed contender"})
			}
			continue
		}
		// Its client moved on from every session but its last: the
		// sessions a grant or a registration named may be stale, so only
		// the client's own reports count here.
		for i, s := range p.own {
			if i < len(p.own)-1 && !slices.Contains(p.own[i+1:], s) {
				sessions = append(sessions, dead{s, "that " + p.id + " left behind"})
			}
		}
	}
	r.mu.Unlock()
	deadline := time.Now().Add(3*r.cfg.SessionTimeout + 20*time.Second)
	for _, s := range sessions {
		for r.env.Cluster.SessionAlive(s.id) {
			if time.Now().After(deadline) {
				r.violate("stuck", "session 0x%x %s still alive", s.id, s.why)
				break
			}
			time.Sleep(100 * time.Millisecond) // polling the servers' session lists
		}
	}
}

// checkLeftovers: with every contender idle and its session still open, no
// node of a contender (ephemeral, or with Curator's protected prefix) may be
// under the recipe's path. Deletes are sent before a release returns but may
// still be in flight, so it looks again for a few seconds first.
func (r *run) checkLeftovers() {
	r.expectNothing(leftovers, 5*time.Second, "with every session still open")
}

// checkEmpty: once every session is closed, nothing at all may be left
// under the recipe's path, the containers included (the servers delete
// empty containers every second).
func (r *run) checkEmpty() {
	r.expectNothing(descendants, 15*time.Second, "after every contender closed its session")
}

// expectNothing lists the recipe's path with list until it comes back
// empty or patience runs out, and reports what is left as orphans.
func (r *run) expectNothing(list func(context.Context, *framework.Client, string) ([]string, error), patience time.Duration, when string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience+30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, r.env.Cluster.DirectAddrs(), framework.WithSessionTimeout(10*time.Second))
	if err != nil {
		r.t.Fatalf("chaos: checker client: %v", err)
	}
	defer c.Close()
	root := "/chaos/" + string(r.cfg.Recipe)
	var left []string
	for deadline := time.Now().Add(patience); ; {
		left, err = list(ctx, c, root)
		if (err == nil && len(left) == 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // waiting for deletes in flight, or the container reaper
	}
	if err != nil {
		r.violate("harness", "listing %s %s: %v", root, when, err)
	}
	for _, n := range left {
		r.violate("orphan", "%s %s", n, when)
	}
}

// descendants lists every node under path; a path that does not exist
// has none, any other error is the caller's.
func descendants(ctx context.Context, c *framework.Client, path string) ([]string, error) {
	var out []string
	err := walk(ctx, c, path, func(p string, _ *zk.Stat) { out = append(out, p) })
	return out, err
}

// leftovers lists the nodes under path that belong to a contender: an
// ephemeral node or one with Curator's protected prefix.
func leftovers(ctx context.Context, c *framework.Client, path string) ([]string, error) {
	var out []string
	err := walk(ctx, c, path, func(p string, st *zk.Stat) {
		if st.EphemeralOwner != 0 || framework.IsProtected(framework.Base(p)) {
			out = append(out, fmt.Sprintf("%s (owner 0x%x)", p, st.EphemeralOwner))
		}
	})
	return out, err
}

// walk calls f for every node under path (not path itself). Nodes that
// vanish during the walk are skipped.
func walk(ctx context.Context, c *framework.Client, path string, f func(string, *zk.Stat)) error {
	children, _, err := c.Children(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ch := range children {
		p := framework.Join(path, ch)
		ok, st, err := c.Exists(ctx, p)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		f(p, st)
		if err := walk(ctx, c, p, f); err != nil {
			return err
		}
	}
	return nil
}

// killAll is the test's cleanup for a run that ended early.
func (r *run) killAll() {
	r.mu.Lock()
	procs := slices.Clone(r.procs)
	r.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Kill()
		}
	}
	r.wg.Wait()
	for _, p := range r.proxies {
		p.Close()
	}
}

func (r *run) save(history []Event, res *Result) {
	r.t.Helper()
	r.writeFiles(history, res)
	if res.Report.Countdown != nil {
		return // no porcupine model: the countdown checker counts per round
	}
	res.Report.annotate(history)
	if err := porcupineVisualize(res.Report, filepath.Join(r.cfg.OutDir, "linearizability.html")); err != nil {
		r.t.Logf("chaos: visualisation: %v", err)
	}
}

// writeFiles writes a run's history, summary and violations to its OutDir.
func (r *run) writeFiles(history []Event, res *Result) {
	r.t.Helper()
	var b strings.Builder
	for _, e := range history {
		b.Write(e.marshal())
	}
	var v strings.Builder
	for _, x := range res.Report.Violations {
		fmt.Fprintf(&v, "%s: %s\n", x.Kind, x.Detail)
	}
	files := map[string]string{"history.jsonl": b.String(), "summary.txt": res.Summary, "violations.txt": v.String()}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(r.cfg.OutDir, name), []byte(data), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}
