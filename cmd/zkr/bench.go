package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

const benchHelp = `NAME
    zkr bench - measure lock latency and throughput against a server

SYNOPSIS
    zkr bench --mode uncontended [--n N] [OPTIONS]
    zkr bench --mode contended [--clients C] [--duration D] [OPTIONS]
    zkr bench --mode latch [--rounds R] [OPTIONS]
    zkr bench --mode queue [--waiters W] [OPTIONS]
    zkr bench --mode keys [--keys K] [--workers W] [--duration D] [OPTIONS]

DESCRIPTION
    Runs one measurement on a fresh path, /zkr-bench/MODE-RANDOM, removed
    afterwards, and prints one result line on stdout; progress goes to
    stderr. The line is a contract other tools read: space-separated
    key=value fields, always in this order, integers only. With -o json
    it is one JSON object with the same names in the same order, peer and
    mode as strings, every other value a JSON number:
        {"peer":"zkrecipes","mode":"uncontended","n":1000,"p50_us":..,...}

    --peer zklock runs the same workload with go-zookeeper's own zk.Lock
    instead of this module's Mutex (a new zk.Lock for each acquisition, as
    it cannot be shared), on go-zookeeper's own sessions (as its users run
    it: not over this module's connection layer), so that the two compare
    on your server in one sitting; its line starts peer=zklock. It has no
    leader latch.

    uncontended   one session: 50 warm-up rounds, then N acquire+release of
                  one mutex, each timed.
        peer=zkrecipes mode=uncontended n=N p50_us=.. p99_us=.. ops_per_s=..

    contended     C sessions, one goroutine each, looping acquire/release on
                  one mutex path for D. overlaps counts critical sections
                  entered while another was inside (must be 0).
        peer=zkrecipes mode=contended clients=C acquisitions=.. per_s=..
        min_client=.. max_client=.. overlaps=..

    latch         two LeaderLatch participants (two sessions) on one path;
                  each round the leader closes and the time until the other
                  leads is measured; a fresh latch takes the closed one's
                  place in the queue before the next round.
        peer=zkrecipes mode=latch rounds=R p50_us=.. p99_us=..

    queue         W waiters (goroutines over S sessions, default up to 10)
                  queue behind a holder, which then releases; the time
                  until all have had the lock, divided by W. With all W
                  queued, the goroutines and the memory (live heap and
                  goroutine stacks) zkr holds beyond its idle baseline,
                  divided by W: each waiter's own goroutine included.
        peer=zkrecipes mode=queue waiters=W per_handoff_us=..
        goroutines_per_waiter=.. bytes_per_waiter=..

    keys          a lock per entity: one session, W goroutines, each
                  acquiring and releasing a new Mutex on one of K paths
                  picked at random, for D; then, on the same paths, the
                  server's floor for the same work: a bare
                  ephemeral-sequential create and delete per operation
                  on one go-zookeeper session. per_s and the latencies
                  are the lock's; floor_per_s the floor's, so the ratio
                  is measured.
        peer=zkrecipes mode=keys keys=K workers=W per_s=.. p50_us=..
        p99_us=.. floor_per_s=..

OPTIONS
    --mode MODE    uncontended, contended, latch, queue or keys (required).
    --peer P       zkrecipes (default) or zklock: whose lock is measured.
    --n N          uncontended: timed rounds (default 1000).
    --clients C    contended: sessions (default 8).
    --duration D   contended, keys: how long (default 5s; keys runs the
                   lock, then the floor, each for D).
    --rounds R     latch: handovers (default 20).
    --waiters W    queue: waiters (default 100).
    --sessions S   queue: sessions the waiters share (default: up to 10).
    --keys K       keys: distinct lock paths (default 1000).
    --workers W    keys: goroutines (default 32).
` + outputHelp + `
GLOBAL OPTIONS
` + globalOptionsHelp + `
EXIT STATUS
    0      measured; the line is on stdout.
    2      Usage error. Nothing was contacted.
    125    the measurement failed (no connection, ZooKeeper error), or
           contended mode saw overlaps (its line is printed all the same).
    130, 143
           interrupted; the path was removed, nothing printed.

ENVIRONMENT
` + globalEnvHelp + `    ZKR_OUTPUT           default for -o/--output (text or json).

EXAMPLES
    zkr bench --connect 127.0.0.1:2181 --mode uncontended --n 1000
    zkr bench --mode contended --clients 8 --duration 5s
    zkr bench -o json --mode keys | jq .per_s
`

type benchOptions struct {
	mode     string
	peer     string
	n        int
	clients  int
	duration time.Duration
	rounds   int
	waiters  int
	keys     int
	workers  int
	sessions int
}

func runBench(a *app, g *globals, args []string) int {
	o := benchOptions{peer: "zkrecipes", n: 1000, clients: 8, duration: 5 * time.Second, rounds: 20, waiters: 100, keys: 1000, workers: 32}
	fs := newFlagSet("bench")
	g.register(fs)
	fs.StringVar(&o.mode, "mode", "", "")
	fs.StringVar(&o.peer, "peer", o.peer, "")
	fs.IntVar(&o.n, "n", o.n, "")
	fs.IntVar(&o.clients, "clients", o.clients, "")
	fs.DurationVar(&o.duration, "duration", o.duration, "")
	fs.IntVar(&o.rounds, "rounds", o.rounds, "")
	fs.IntVar(&o.waiters, "waiters", o.waiters, "")
	fs.IntVar(&o.keys, "keys", o.keys, "")
	fs.IntVar(&o.workers, "workers", o.workers, "")
	fs.IntVar(&o.sessions, "sessions", 0, "")
	out := newOutput()
	out.register(fs)
	code, ok := a.parseArgs("bench", benchHelp, func() error {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if len(fs.Args()) > 0 {
			return fmt.Errorf("unexpected argument %q", fs.Args()[0])
		}
		if err := out.check(); err != nil {
			return err
		}
		return o.check()
	})
	if !ok {
		return code
	}
	opts, err := g.prepare()
	if err != nil {
		return a.usage("zkr bench", "%v", err)
	}
	log := a.logger("bench", g)
	sig := watchSignals(nil)
	defer sig.stop()
	b := &bench{g: g, opts: opts, log: log, ctx: sig.ctx, peer: o.peer,
		path: "/zkr-bench/" + o.mode + "-" + strconv.FormatUint(rand.Uint64(), 36)}
	line, err := b.run(o)
	b.close()
	if line != nil {
		if werr := out.print(a.stdout, line); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return sig.failed(log, err)
	}
	return 0
}

func (o *benchOptions) check() error {
	switch o.mode {
	case "uncontended", "contended", "latch", "queue", "keys":
	case "":
		return errors.New("missing --mode (uncontended, contended, latch, queue or keys)")
	default:
		return fmt.Errorf("--mode %q: want uncontended, contended, latch, queue or keys", o.mode)
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"--n", o.n}, {"--clients", o.clients}, {"--rounds", o.rounds}, {"--waiters", o.waiters}, {"--keys", o.keys}, {"--workers", o.workers}} {
		if v.n < 1 {
			return fmt.Errorf("%s %d: must be at least 1", v.name, v.n)
		}
	}
	if o.duration <= 0 {
		return fmt.Errorf("--duration %v: must be positive", o.duration)
	}
	if o.sessions < 0 {
		return fmt.Errorf("--sessions %d: must be at least 1", o.sessions)
	}
	switch {
	case o.peer != "zkrecipes" && o.peer != "zklock":
		return fmt.Errorf("--peer %q: want zkrecipes or zklock", o.peer)
	case o.peer == "zklock" && o.mode == "latch":
		return errors.New("--peer zklock --mode latch: go-zookeeper has no leader latch")
	}
	return nil
}

// bench is one measurement: its sessions, its path, and what to undo.
type bench struct {
	g        *globals
	opts     []framework.Option
	log      *logger
	ctx      context.Context
	peer     string
	path     string
	cleanups []func()

	rawMu sync.Mutex
	raw   map[*framework.Client]*zk.Conn // see rawFor
}

// locker takes the lock once and returns how to release it.
type locker func(ctx context.Context) (release func() error, err error)

// locker returns the peer's lock on path over c. Ours is a Mutex, made
// once: reentrant per goroutine, so goroutines sharing it contend as
// processes do; keep closes it when the measurement ends. go-zookeeper's
// zk.Lock cannot be shared, so each of its acquisitions makes its own.
func (b *bench) locker(c *framework.Client, path, id string, keep bool) (locker, error) {
	if b.peer == "zklock" {
		z, err := b.rawFor(c)
		if err != nil {
			return nil, err
		}
		full := path
		if ns := c.Namespace(); ns != "" {
			full = "/" + ns + path
		}
		acl := zk.WorldACL(zk.PermAll)
		return func(context.Context) (func() error, error) {
			l := zk.NewLock(z, full, acl)
			if err := l.Lock(); err != nil {
				return nil, err
			}
			return l.Unlock, nil
		}, nil
	}
	m, err := mutex.New(c, path, mutex.WithParticipantID(id))
	if err != nil {
		return nil, err
	}
	if keep {
		b.later(func() { m.Close() })
	}
	return func(ctx context.Context) (func() error, error) {
		h, err := m.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return h.Release, nil
	}, nil
}

// rawFor is a session of go-zookeeper's own, as its users run it, beside
// c's (same servers, session timeout, credentials and TLS): zk.Lock and
// the floor run on it. Over c's connection they would run on this
// module's connection layer (its read-ahead, its liveness sniffing), which
// zk.Lock's users do not have.
func (b *bench) rawFor(c *framework.Client) (*zk.Conn, error) {
	b.rawMu.Lock()
	defer b.rawMu.Unlock()
	if z, ok := b.raw[c]; ok {
		return z, nil
	}
	auth, tlsCfg, err := b.g.access()
	if err != nil {
		return nil, err
	}
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		if tlsCfg != nil {
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, tlsCfg)
		}
		return net.DialTimeout(network, address, timeout)
	}
	z, events, err := zk.Connect(strings.Split(b.g.connect, ","), b.g.sessionTimeout,
		zk.WithLogInfo(false), zk.WithLogger(quietZK{}), zk.WithDialer(dial))
	if err != nil {
		return nil, err
	}
	b.later(z.Close)
	deadline := time.After(b.g.connectTimeout)
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-deadline:
			return nil, fmt.Errorf("go-zookeeper: no session with %s after %v", b.g.connect, b.g.connectTimeout)
		case <-b.ctx.Done():
			return nil, context.Cause(b.ctx)
		}
	}
	if auth != "" {
		if err := z.AddAuth("digest", []byte(auth)); err != nil {
			return nil, fmt.Errorf("go-zookeeper: %w", err)
		}
	}
	if b.raw == nil {
		b.raw = map[*framework.Client]*zk.Conn{}
	}
	b.raw[c] = z
	return z, nil
}

// quietZK keeps go-zookeeper's own log lines off zkr's stderr.
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

func (b *bench) run(o benchOptions) (record, error) {
	switch o.mode {
	case "uncontended":
		return b.uncontended(o.n)
	case "contended":
		return b.contended(o.clients, o.duration)
	case "latch":
		return b.latch(o.rounds)
	case "keys":
		return b.keys(o.keys, o.workers, o.duration)
	default:
		return b.queue(o.waiters, o.sessions)
	}
}

// dial opens one more session; the first one also removes the path at the
// end, after everything made on it is closed.
func (b *bench) dial() (*framework.Client, error) {
	c, err := b.g.dial(b.ctx, b.opts)
	if err != nil {
		return nil, err
	}
	b.later(func() { closeClient(c) })
	if len(b.cleanups) == 1 {
		b.later(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.Delete(ctx, b.path, -1, framework.WithChildren()); err != nil && !errors.Is(err, zk.ErrNoNode) {
				b.log.printf("remove %s: %v", b.path, err)
			}
		})
	}
	return c, nil
}

func (b *bench) later(f func()) { b.cleanups = append(b.cleanups, f) }

// close undoes everything, last made first.
func (b *bench) close() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
	b.cleanups = nil
}

func (b *bench) dialN(n int) ([]*framework.Client, error) {
	cs := make([]*framework.Client, n)
	for i := range cs {
		c, err := b.dial()
		if err != nil {
			return nil, err
		}
		cs[i] = c
	}
	return cs, nil
}

func (b *bench) uncontended(n int) (record, error) {
	c, err := b.dial()
	if err != nil {
		return nil, err
	}
	lock, err := b.locker(c, b.path, "bench", true)
	if err != nil {
		return nil, err
	}
	round := func() error {
		release, err := lock(b.ctx)
		if err != nil {
			return err
		}
		return release()
	}
	b.log.printf("uncontended: 50 warm-up rounds on %s", b.path)
	for range 50 {
		if err := round(); err != nil {
			return nil, err
		}
	}
	b.log.printf("uncontended: %d timed rounds", n)
	lat := make([]time.Duration, n)
	start := time.Now()
	for i := range lat {
		t0 := time.Now()
		if err := round(); err != nil {
			return nil, err
		}
		lat[i] = time.Since(t0)
	}
	total := time.Since(start)
	return record{{"peer", b.peer}, {"mode", "uncontended"}, {"n", n}, {"p50_us", percentile(lat, 0.50)},
		{"p99_us", percentile(lat, 0.99)}, {"ops_per_s", int64(float64(n) / total.Seconds())}}, nil
}

func (b *bench) contended(clients int, d time.Duration) (record, error) {
	cs, err := b.dialN(clients)
	if err != nil {
		return nil, err
	}
	ls := make([]locker, clients)
	for i, c := range cs {
		if ls[i], err = b.locker(c, b.path, "bench-"+strconv.Itoa(i), true); err != nil {
			return nil, err
		}
	}
	b.log.printf("contended: %d sessions on %s for %v", clients, b.path, d)
	var inside, overlaps atomic.Int64
	counts := make([]int64, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for i, lock := range ls {
		wg.Go(func() {
			for time.Now().Before(end) {
				release, err := lock(b.ctx)
				if err != nil {
					errs[i] = err
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				counts[i]++
				inside.Add(-1)
				if err := release(); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	total := int64(0)
	for _, n := range counts {
		total += n
	}
	line := record{{"peer", b.peer}, {"mode", "contended"}, {"clients", clients}, {"acquisitions", total},
		{"per_s", int64(float64(total) / elapsed.Seconds())}, {"min_client", slices.Min(counts)},
		{"max_client", slices.Max(counts)}, {"overlaps", overlaps.Load()}}
	if overlaps.Load() > 0 {
		return line, fmt.Errorf("mutual exclusion broken: %d overlaps", overlaps.Load())
	}
	return line, nil
}

func (b *bench) latch(rounds int) (record, error) {
	cs, err := b.dialN(2)
	if err != nil {
		return nil, err
	}
	var latches [2]*leader.Latch
	start := func(i int) error {
		l, err := leader.NewLatch(cs[i], b.path, leader.WithParticipantID("bench-"+strconv.Itoa(i)))
		if err != nil {
			return err
		}
		latches[i] = l
		return l.Start(b.ctx)
	}
	defer func() {
		for _, l := range latches {
			if l != nil {
				l.Close()
			}
		}
	}()
	if err := start(0); err != nil {
		return nil, err
	}
	if _, err := latches[0].Await(b.ctx); err != nil {
		return nil, err
	}
	if err := start(1); err != nil {
		return nil, err
	}
	b.log.printf("latch: %d handovers on %s", rounds, b.path)
	lat := make([]time.Duration, rounds)
	lead := 0
	for r := range lat {
		if err := b.awaitQueue(b.ctx, cs[0], "latch-", 2); err != nil {
			return nil, err
		}
		next := 1 - lead
		t0 := time.Now()
		if err := latches[lead].Close(); err != nil {
			return nil, err
		}
		if _, err := latches[next].Await(b.ctx); err != nil {
			return nil, err
		}
		lat[r] = time.Since(t0)
		if err := start(lead); err != nil {
			return nil, err
		}
		lead = next
	}
	return record{{"peer", "zkrecipes"}, {"mode", "latch"}, {"rounds", rounds},
		{"p50_us", percentile(lat, 0.50)}, {"p99_us", percentile(lat, 0.99)}}, nil
}

// awaitQueue waits until b.path has n nodes named with marker, or ctx ends.
func (b *bench) awaitQueue(ctx context.Context, c *framework.Client, marker string, n int) error {
	for {
		kids, _, ch, err := c.ChildrenW(ctx, b.path)
		if err != nil {
			return err
		}
		if count(kids, marker) >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func count(names []string, marker string) int {
	n := 0
	for _, k := range names {
		if strings.Contains(k, marker) {
			n++
		}
	}
	return n
}

func (b *bench) queue(waiters, sessions int) (record, error) {
	if sessions == 0 {
		sessions = min(waiters, 10)
	}
	cs, err := b.dialN(sessions + 1)
	if err != nil {
		return nil, err
	}
	holder, err := b.locker(cs[0], b.path, "bench-holder", true)
	if err != nil {
		return nil, err
	}
	release, err := holder(b.ctx)
	if err != nil {
		return nil, err
	}
	ls := make([]locker, sessions)
	for i := range ls {
		if ls[i], err = b.locker(cs[i+1], b.path, "bench-"+strconv.Itoa(i), true); err != nil {
			return nil, err
		}
	}
	b.log.printf("queue: %d waiters over %d sessions on %s", waiters, sessions, b.path)
	// The baseline once the set-up's requests are over: the clients' idle
	// workers (see settle) are gone then, as they are at the second look.
	if err := settle(b.ctx); err != nil {
		return nil, err
	}
	goroutines0, bytes0 := footprint()
	errs := make([]error, waiters)
	var wg sync.WaitGroup
	// A waiter that fails never queues: the wait for a full queue must end.
	queued, abort := context.WithCancelCause(b.ctx)
	defer abort(nil)
	for i := range waiters {
		lock := ls[i%sessions]
		wg.Go(func() {
			release, err := lock(b.ctx)
			if err != nil {
				errs[i] = err
				abort(err)
				return
			}
			errs[i] = release()
		})
	}
	err = b.awaitQueue(queued, cs[0], "lock-", waiters+1)
	if err != nil && b.ctx.Err() == nil && queued.Err() != nil {
		err = nil // a waiter's failure, which errs reports
	}
	if err == nil && queued.Err() == nil {
		// Every node is in the queue, but the last waiters may still be
		// reading it or setting their watches: not part of the handoffs,
		// nor of what a parked waiter costs.
		err = settle(queued)
		if b.ctx.Err() == nil && queued.Err() != nil {
			err = nil
		}
	}
	goroutines1, bytes1 := footprint()
	start := time.Now()
	if rerr := release(); err == nil {
		err = rerr
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(append(errs, err)...); err != nil {
		return nil, err
	}
	return record{{"peer", b.peer}, {"mode", "queue"}, {"waiters", waiters},
		{"per_handoff_us", elapsed.Microseconds() / int64(waiters)},
		{"goroutines_per_waiter", int64(math.Round(float64(goroutines1-goroutines0) / float64(waiters)))},
		{"bytes_per_waiter", (bytes1 - bytes0) / int64(waiters)}}, nil
}

// settle waits until the process's goroutines have stopped changing for a
// second: each request in flight has one, so a still count means every
// waiter is parked on its watch, and a client's idle workers, which end
// after half a second without work, are gone.
func settle(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last, still := runtime.NumGoroutine(), 0
	for still < 10 {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
		if n := runtime.NumGoroutine(); n != last {
			last, still = n, 0
			continue
		}
		still++
	}
	return nil
}

// footprint is the process's goroutines, and its live heap plus goroutine
// stacks after a collection.
func footprint() (goroutines int, bytes int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), int64(m.HeapAlloc + m.StackInuse)
}

// keys is a lock per entity, then the server's floor for the same work.
func (b *bench) keys(keys, workers int, d time.Duration) (record, error) {
	c, err := b.dial()
	if err != nil {
		return nil, err
	}
	key := func(i int) string { return b.path + "/k" + strconv.Itoa(i) }
	if b.peer == "zklock" {
		// Its session is dialed before the clock starts, as ours is, and a
		// dial that fails fails once, not once per worker.
		if _, err := b.rawFor(c); err != nil {
			return nil, err
		}
	}
	b.log.printf("keys: %d workers on %d lock paths under %s for %v", workers, keys, b.path, d)
	n, lat, err := b.loop(workers, keys, d, func(i int) error {
		lock, err := b.locker(c, key(i), "bench", false) // a new lock value each time
		if err != nil {
			return err
		}
		release, err := lock(b.ctx)
		if err != nil {
			return err
		}
		return release()
	})
	if err != nil {
		return nil, err
	}
	// The floor: what the server must do for any lock of this shape, a
	// create and a delete of an ephemeral-sequential node, sent by
	// go-zookeeper with nothing around it.
	z, err := b.rawFor(c)
	if err != nil {
		return nil, err
	}
	acl := zk.WorldACL(zk.PermAll)
	full := func(p string) string {
		if ns := c.Namespace(); ns != "" {
			return "/" + ns + p
		}
		return p
	}
	for i := range keys {
		if _, err := c.Create(b.ctx, key(i)+"-floor", nil, framework.WithParents()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return nil, err
		}
	}
	b.log.printf("keys: the floor, %d workers for %v", workers, d)
	floor, _, err := b.loop(workers, keys, d, func(i int) error {
		p, err := z.Create(full(key(i)+"-floor/n-"), nil, zk.FlagEphemeralSequential, acl)
		if err != nil {
			return err
		}
		return z.Delete(p, -1)
	})
	if err != nil {
		return nil, err
	}
	return record{{"peer", b.peer}, {"mode", "keys"}, {"keys", keys}, {"workers", workers},
		{"per_s", int64(float64(n) / d.Seconds())}, {"p50_us", percentile(lat, 0.50)}, {"p99_us", percentile(lat, 0.99)},
		{"floor_per_s", int64(float64(floor) / d.Seconds())}}, nil
}

// loop runs op on a random key from workers goroutines for d and returns
// how many completed and each one's latency.
func (b *bench) loop(workers, keys int, d time.Duration, op func(key int) error) (int, []time.Duration, error) {
	lats := make([][]time.Duration, workers)
	errs := make([]error, workers)
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for time.Now().Before(end) && b.ctx.Err() == nil {
				t0 := time.Now()
				if err := op(rand.IntN(keys)); err != nil {
					errs[w] = err
					return
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, nil, err
	}
	if err := context.Cause(b.ctx); err != nil {
		return 0, nil, err
	}
	all := slices.Concat(lats...)
	if len(all) == 0 {
		return 0, nil, errors.New("no operation completed")
	}
	return len(all), all, nil
}

// percentile returns the p-th percentile of d in whole microseconds.
func percentile(d []time.Duration, p float64) int64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)].Microseconds()
}
