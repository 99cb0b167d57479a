package main

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
)

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
	watcher, release, ls, err := b.queueSetup(sessions)
	if err != nil {
		return nil, err
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
	err = b.queueFull(queued, watcher, waiters)
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

// queueSetup dials a holder's session and sessions waiters' ones, takes
// the lock on the holder's, and returns that session (to watch the queue
// from), how to release the lock, and a locker on each waiters' session.
func (b *bench) queueSetup(sessions int) (*framework.Client, func() error, []locker, error) {
	cs, err := b.dialN(sessions + 1)
	if err != nil {
		return nil, nil, nil, err
	}
	holder, err := b.locker(cs[0], b.path, "bench-holder")
	if err != nil {
		return nil, nil, nil, err
	}
	release, err := holder(b.ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	ls := make([]locker, sessions)
	for i := range ls {
		if ls[i], err = b.locker(cs[i+1], b.path, "bench-"+strconv.Itoa(i)); err != nil {
			return nil, nil, nil, err
		}
	}
	return cs[0], release, ls, nil
}

// queueFull waits, watching from c, until the holder and waiters nodes are
// in the queue and the process has settled; nil also if queued ended by a
// waiter's failure, which that waiter reports.
func (b *bench) queueFull(queued context.Context, c *framework.Client, waiters int) error {
	err := b.awaitQueue(queued, c, "lock-", waiters+1)
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
	return err
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
