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
	"github.com/zkrecipes/zkrecipes/internal/procstat"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

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
	cfg      *config
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
		acl := zk.WorldACL(zk.PermAll)
		return func(context.Context) (func() error, error) {
			l := zk.NewLock(z, path, acl)
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
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		if b.cfg.tls != nil {
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, b.cfg.tls)
		}
		return net.DialTimeout(network, address, timeout)
	}
	z, events, err := zk.Connect(strings.Split(b.cfg.connect, ","), b.cfg.sessionTimeout,
		zk.WithLogInfo(false), zk.WithLogger(quietZK{}), zk.WithDialer(dial))
	if err != nil {
		return nil, err
	}
	b.later(z.Close)
	deadline := time.After(b.cfg.dialTimeout)
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-deadline:
			return nil, fmt.Errorf("go-zookeeper: no session with %s after %v", b.cfg.connect, b.cfg.dialTimeout)
		case <-b.ctx.Done():
			return nil, context.Cause(b.ctx)
		}
	}
	if b.cfg.auth != "" {
		if err := z.AddAuth("digest", []byte(b.cfg.auth)); err != nil {
			return nil, fmt.Errorf("go-zookeeper: %w", err)
		}
	}
	if b.raw == nil {
		b.raw = map[*framework.Client]*zk.Conn{}
	}
	b.raw[c] = z
	return z, nil
}

// quietZK keeps go-zookeeper's own log lines off zkr-bench's stderr.
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
	c, err := b.cfg.dial(b.ctx)
	if err != nil {
		return nil, err
	}
	b.later(func() { c.Close() })
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
	meter := startCost()
	start := time.Now()
	end := start.Add(d)
	for i, lock := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
		}()
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
	cpuNS, allocs := meter.per(total)
	line := record{{"peer", b.peer}, {"mode", "contended"}, {"clients", clients}, {"acquisitions", total},
		{"per_s", int64(float64(total) / elapsed.Seconds())}, {"min_client", slices.Min(counts)},
		{"max_client", slices.Max(counts)}, {"overlaps", overlaps.Load()},
		{"cpu_ns_per_op", cpuNS}, {"allocs_per_op", allocs}}
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := lock(b.ctx)
			if err != nil {
				errs[i] = err
				abort(err)
				return
			}
			errs[i] = release()
		}()
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
	meter := startCost()
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
	cpuNS, allocs := meter.per(int64(n))
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
		{"floor_per_s", int64(float64(floor) / d.Seconds())}, {"cpu_ns_per_op", cpuNS}, {"allocs_per_op", allocs}}, nil
}

// cost is the process's CPU time and heap allocations at a start, for the
// client's own cost per operation: what the peers' users pay in their own
// process, whatever the server does. The process holds nothing else that
// works while a measurement runs (its other sessions are idle).
type cost struct {
	cpu     time.Duration
	mallocs uint64
}

func startCost() cost {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return cost{cpu: procstat.CPU(), mallocs: m.Mallocs}
}

// per returns the CPU nanoseconds and the allocations per operation since
// c, over ops operations.
func (c cost) per(ops int64) (cpuNS, allocs int64) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if ops <= 0 {
		return 0, 0
	}
	return int64(procstat.CPU()-c.cpu) / ops, int64(m.Mallocs-c.mallocs) / ops
}

// loop runs op on a random key from workers goroutines for d and returns
// how many completed and each one's latency.
func (b *bench) loop(workers, keys int, d time.Duration, op func(key int) error) (int, []time.Duration, error) {
	lats := make([][]time.Duration, workers)
	errs := make([]error, workers)
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && b.ctx.Err() == nil {
				t0 := time.Now()
				if err := op(rand.IntN(keys)); err != nil {
					errs[w] = err
					return
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		}()
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
