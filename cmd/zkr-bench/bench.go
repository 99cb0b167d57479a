package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
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
// processes do; it is closed when the measurement ends. go-zookeeper's
// zk.Lock cannot be shared, so each of its acquisitions makes its own.
func (b *bench) locker(c *framework.Client, path, id string) (locker, error) {
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
	b.later(func() { m.Close() })
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
	lock, err := b.locker(c, b.path, "bench")
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
		if ls[i], err = b.locker(c, b.path, "bench-"+strconv.Itoa(i)); err != nil {
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
