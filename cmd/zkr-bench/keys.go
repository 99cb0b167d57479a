package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/procstat"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

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
	lock := b.keyLock(c)
	meter := startCost()
	n, lat, err := b.loop(workers, keys, d, func(i int) error {
		release, err := lock(b.ctx, key(i))
		if err != nil {
			return err
		}
		return release()
	})
	if err != nil {
		return nil, err
	}
	cpuNS, allocs := meter.per(int64(n))
	floor, err := b.floor(c, keys, workers, d, key)
	if err != nil {
		return nil, err
	}
	return record{{"peer", b.peer}, {"mode", "keys"}, {"keys", keys}, {"workers", workers},
		{"per_s", int64(float64(n) / d.Seconds())}, {"p50_us", percentile(lat, 0.50)}, {"p99_us", percentile(lat, 0.99)},
		{"floor_per_s", int64(float64(floor) / d.Seconds())}, {"cpu_ns_per_op", cpuNS}, {"allocs_per_op", allocs}}, nil
}

// keyLock returns the peer's cheapest right way to lock one key once over
// c: ours is the package's one-off mutex.Acquire (no Mutex per key), a
// zk.Lock a new zk.Lock each time (it cannot be shared).
func (b *bench) keyLock(c *framework.Client) func(ctx context.Context, path string) (release func() error, err error) {
	if b.peer == "zklock" {
		return func(ctx context.Context, path string) (func() error, error) {
			lock, err := b.locker(c, path, "bench")
			if err != nil {
				return nil, err
			}
			return lock(ctx)
		}
	}
	id := mutex.WithParticipantID("bench")
	return func(ctx context.Context, path string) (func() error, error) {
		h, err := mutex.Acquire(ctx, c, path, id)
		if err != nil {
			return nil, err
		}
		return h.Release, nil
	}
}

// floor is what the server must do for any lock of keys' shape, a create
// and a delete of an ephemeral-sequential node, sent by go-zookeeper with
// nothing around it: how many workers complete in d on c's raw session.
func (b *bench) floor(c *framework.Client, keys, workers int, d time.Duration, key func(int) string) (int, error) {
	z, err := b.rawFor(c)
	if err != nil {
		return 0, err
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
			return 0, err
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
	return floor, err
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
