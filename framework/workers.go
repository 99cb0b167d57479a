package framework

import (
	"context"
	"runtime/pprof"
	"slices"
	"sync"
	"time"
)

// Go runs f on a goroutine of the client's and reports true; once Close
// has begun it runs nothing and reports false. Close waits for every f it
// ran to return, so f must end by itself once Done is closed (a select on
// Done, or a request, which Close ends). It is how the recipes run their
// background work, so that none of it outlives the client. f runs without
// its caller's profiler labels.
func (c *Client) Go(f func()) bool {
	// A reused worker rather than a new goroutine: a request's call chain
	// (go-zookeeper, the retry loop) is deeper than a fresh stack, which
	// grows by copying, a real share of the client's cost under
	// contention; a worker keeps the stack it grew. The most recently idle
	// first, so that a light load keeps reusing a few and the rest of a
	// burst's workers time out and end.
	c.spawnMu.Lock()
	defer c.spawnMu.Unlock()
	if c.stopped {
		return false
	}
	if n := len(c.idle); n > 0 {
		w := c.idle[n-1]
		c.idle[n-1] = nil
		c.idle = c.idle[:n-1]
		w.task <- f // buffered: an idle worker's is empty
		return true
	}
	c.wg.Add(1)
	go c.work(f)
	return true
}

// Workers that wait for tasks at once, and how long one waits before it
// ends: enough for a steady load's concurrency (32 goroutines locking keys
// over one client keep about that many busy), and no lasting goroutines
// once a burst is over (ten thousand queued waiters' creates must not
// leave ten thousand idle goroutines behind, nor a parked queue 64). A
// steady load hands a worker its next task within microseconds.
const (
	maxIdleWorkers = 64
	workerIdle     = 500 * time.Millisecond
)

// worker is one of a client's worker goroutines, as Go sees it.
type worker struct {
	task chan func() // one task at a time, handed over under spawnMu
}

// work runs f, then the tasks spawn hands it, until it has had none for a
// while (its ticker ticks twice while it waits: between one and two
// workerIdle; the ticker is not reset per task: resetting a timer after
// each task cost more than the task's own channel work), too many others
// wait, or Close begins. A task runs with the profiler labels of its
// caller's context where it has one (callTracked: the context's, which
// are the caller's under pprof.Do), else with none, and an idle worker has
// none: a worker must not lend one caller's labels to another's work.
func (c *Client) work(f func()) {
	defer c.wg.Done()
	w := &worker{task: make(chan func(), 1)}
	var tick *time.Ticker
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	noLabels := context.Background()
	pprof.SetGoroutineLabels(noLabels) // not those of whoever started it
	for {
		f()
		f = nil // nothing of the task lives on while the worker waits
		pprof.SetGoroutineLabels(noLabels)
		c.spawnMu.Lock()
		if c.stopped || len(c.idle) >= maxIdleWorkers {
			c.spawnMu.Unlock()
			return
		}
		c.idle = append(c.idle, w)
		c.spawnMu.Unlock()
		if tick == nil {
			tick = time.NewTicker(workerIdle)
		} else {
			// A tick that fell due during the task is no idle time.
			select {
			case <-tick.C:
			default:
			}
		}
		for ticks := 0; f == nil; {
			select {
			case f = <-w.task:
			case <-tick.C:
				if ticks++; ticks < 2 {
					continue
				}
				if c.leaveIdle(w) {
					return
				}
				f = <-w.task // handed a task as it was leaving
			case <-c.quit:
				if c.leaveIdle(w) {
					return
				}
				f = <-w.task // handed a task before Close began: it runs
			}
		}
	}
}

// leaveIdle takes w off the idle list, unless spawn has just handed it a
// task (then w.task holds it, since spawn sends under spawnMu).
func (c *Client) leaveIdle(w *worker) bool {
	c.spawnMu.Lock()
	defer c.spawnMu.Unlock()
	i := slices.Index(c.idle, w)
	if i < 0 {
		return false
	}
	c.idle = slices.Delete(c.idle, i, i+1)
	return true
}

// whenDone returns a channel closed once wg's count is zero.
func (c *Client) whenDone(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	if !c.Go(func() { wg.Wait(); close(ch) }) {
		close(ch) // closing: the deleter is being abandoned, the job with it
	}
	return ch
}
