package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// contenderEnv carries a contender's Spec (JSON) into the re-executed test
// binary.
const contenderEnv = "ZKR_CHAOS_CONTENDER"

// Spec tells one contender process what to do.
type Spec struct {
	Recipe         Recipe        `json:"recipe"`
	Servers        []string      `json:"servers"`
	Path           string        `json:"path"`
	ID             string        `json:"id"`
	SessionTimeout time.Duration `json:"sessionTimeout"`
	// Fence is the fenced resource's URL; empty for recipes without a
	// single writer (the semaphore).
	Fence     string `json:"fence,omitempty"`
	MaxLeases int    `json:"maxLeases,omitempty"`
	// Register is the fenced ZooKeeper register's path: every hold writes
	// to it through hold.Hold.Fenced only (see register.go). Empty for a
	// recipe that hands out no *hold.Hold (the selector).
	Register string `json:"register,omitempty"`
	Seed     uint64 `json:"seed"`
}

// IsContender reports whether this process was started as a contender. A
// TestMain calls it first and, if true, RunContender instead of the tests.
func IsContender() bool { return os.Getenv(contenderEnv) != "" }

// RunContender is a contender process's main: it loops on its recipe until
// told on stdin to quiesce ("quiesce": finish, release, report idle) and
// then to exit ("exit": close everything, check for leaked goroutines). It
// reports every step on stdout as one JSON Event per line, written straight
// to the pipe so that a kill -9 loses nothing already reported.
func RunContender() int {
	var spec Spec
	if err := json.Unmarshal([]byte(os.Getenv(contenderEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "chaos contender: bad spec:", err)
		return 2
	}
	c := &contender{spec: spec, rng: rand.New(rand.NewPCG(spec.Seed, uint64(os.Getpid()))), finalAsk: make(chan struct{})}
	if err := c.run(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "chaos contender:", err)
		return 1
	}
	return 0
}

type contender struct {
	spec   Spec
	rng    *rand.Rand
	client *framework.Client
	http   *http.Client
	mu     sync.Mutex // serialises stdout lines
	op     int
	// freeze asks the next trust check to stop the process (see work).
	// Taking it and saying so happen under freezeMu, so the orchestrator
	// gets exactly one answer to "freeze" then "nofreeze".
	freezeMu sync.Mutex
	freeze   bool
	session  int64 // the last session reported
	// finalAsk is closed when the orchestrator asks for the final
	// comparison ("final"; see discoveryQuiet).
	finalAsk  chan struct{}
	finalOnce sync.Once
	// keep is said with each grant (Event.Keep): the latch in use stays
	// in the election when a term is lost (latchLoop).
	keep bool
}

func (c *contender) emit(e Event) {
	if e.T == 0 {
		e.T = now()
	}
	e.Client = c.spec.ID
	c.mu.Lock()
	defer c.mu.Unlock()
	// One write per line on an unbuffered pipe: a line is either all in the
	// orchestrator's pipe or not written at all when the process is killed.
	_, _ = os.Stdout.Write(e.marshal())
}

func (c *contender) run(stdin io.Reader) error {
	commands := make(chan string, 2)
	go func() {
		defer close(commands)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			switch sc.Text() {
			case "freeze":
				c.freezeMu.Lock()
				c.freeze = true
				c.freezeMu.Unlock()
				continue
			case "nofreeze":
				c.freezeMu.Lock()
				if c.freeze { // else "freezing" has been said already
					c.freeze = false
					c.emit(Event{Kind: KindNoFreeze})
				}
				c.freezeMu.Unlock()
				continue
			case "final":
				c.finalOnce.Do(func() { close(c.finalAsk) })
				continue
			}
			commands <- sc.Text()
			if sc.Text() == "exit" {
				return
			}
		}
	}()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dialCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	client, err := framework.Dial(dialCtx, c.spec.Servers, framework.WithLogger(logger),
		framework.WithSessionTimeout(c.spec.SessionTimeout), framework.WithLogger(logger))
	cancel()
	if err != nil {
		return err
	}
	c.client = client
	c.http = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	c.session = client.Session().ID
	c.emit(Event{Kind: KindStart, Pid: os.Getpid(), Session: c.session})

	loop, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.loop(loop) }()

	var loopErr error
	finished := false
	finish := func() {
		stop()
		if !finished {
			loopErr, finished = <-done, true
		}
	}
	for cmd := range commands {
		switch cmd {
		case "quiesce":
			finish()
			c.emit(Event{Kind: KindIdle})
		case "exit":
			finish()
			if err := client.Close(); err != nil {
				c.emit(Event{Kind: KindLeak, Detail: "client close: " + err.Error()})
			}
			c.http.CloseIdleConnections()
			// The stdin reader has returned after "exit"; anything still
			// running now belongs to the library. goleak's own retries last
			// under half a second; idle HTTP links take their time to go.
			var leak error
			for deadline := time.Now().Add(5 * time.Second); ; {
				if leak = goleak.Find(); leak == nil || time.Now().After(deadline) {
					break
				}
			}
			if leak != nil {
				c.emit(Event{Kind: KindLeak, Detail: leak.Error()})
			}
			c.emit(Event{Kind: KindExit})
			return loopErr
		}
	}
	stop()
	return errors.New("stdin closed before exit")
}

// loop runs the recipe until ctx ends. Acquire timeouts are random and short
// on purpose: a timed-out waiter must leave no node behind.
func (c *contender) loop(ctx context.Context) error {
	switch c.spec.Recipe {
	case Mutex:
		return c.mutexLoop(ctx)
	case RWLock:
		l, err := rwlock.New(c.client, c.spec.Path, rwlock.WithParticipantID(c.spec.ID))
		if err != nil {
			return err
		}
		defer l.Close()
		for ctx.Err() == nil {
			if c.rng.IntN(3) == 0 {
				w := l.WriteLock()
				c.lockOnce(ctx, "w", w.Acquire, func(*hold.Hold) error { return w.Release() })
			} else {
				r := l.ReadLock()
				c.lockOnce(ctx, "r", r.Acquire, func(*hold.Hold) error { return r.Release() })
			}
		}
	case Semaphore:
		s, err := semaphore.New(c.client, c.spec.Path, c.spec.MaxLeases, semaphore.WithParticipantID(c.spec.ID))
		if err != nil {
			return err
		}
		defer s.Close()
		c.leaseLoop(ctx, s)
	case Latch:
		c.latchLoop(ctx)
	case Selector:
		return c.selectorLoop(ctx)
	case Atomic:
		return c.atomicLoop(ctx)
	case Countdown:
		return c.countdownLoop(ctx)
	case SharedCount:
		return c.sharedLoop(ctx)
	case Cache:
		return c.cacheLoop(ctx)
	case Partition:
		return c.partitionLoop(ctx)
	case Discovery:
		return c.discoveryLoop(ctx)
	case Barrier:
		return c.barrierLoop(ctx)
	default:
		return fmt.Errorf("unknown recipe %q", c.spec.Recipe)
	}
	return nil
}

// mutexLoop runs a Mutex's contender: plain and leased holds of a Mutex,
// and the package's one-off Acquire, in one queue.
func (c *contender) mutexLoop(ctx context.Context) error {
	m, err := mutex.New(c.client, c.spec.Path, mutex.WithParticipantID(c.spec.ID))
	if err != nil {
		return err
	}
	defer m.Close()
	// One hold in three has a lease shorter than many holds last (see
	// work), so that leases run out mid-work, and under every fault.
	leased, err := mutex.New(c.client, c.spec.Path, mutex.WithParticipantID(c.spec.ID), mutex.WithLeaseTime(leaseTime))
	if err != nil {
		return err
	}
	defer leased.Close()
	// Half the holds are the package's one-off Acquire, in the same
	// queue as the Mutexes' (one in three of those leased too).
	id, lease := mutex.WithParticipantID(c.spec.ID), mutex.WithLeaseTime(leaseTime)
	oneShot := func(opts ...mutex.Option) func(context.Context) (*hold.Hold, error) {
		return func(ctx context.Context) (*hold.Hold, error) {
			return mutex.Acquire(ctx, c.client, c.spec.Path, opts...)
		}
	}
	for ctx.Err() == nil {
		switch n := c.rng.IntN(6); {
		case n == 0:
			c.lockOnce(ctx, "", leased.Acquire, func(h *hold.Hold) error { return leased.Release() })
		case n == 1:
			c.lockOnce(ctx, "", oneShot(id, lease), (*hold.Hold).Release)
		case n <= 3:
			c.lockOnce(ctx, "", oneShot(id), (*hold.Hold).Release)
		default:
			c.lockOnce(ctx, "", m.Acquire, func(h *hold.Hold) error { return m.Release() })
		}
	}
	return nil
}

// lockOnce is one acquire, hold, release round of a lock whose holds are
// *hold.Hold.
func (c *contender) lockOnce(ctx context.Context, mode string, acquire func(context.Context) (*hold.Hold, error), release func(*hold.Hold) error) {
	c.op++
	op := c.op
	c.asking(op, mode)
	actx, cancel := context.WithTimeout(ctx, c.acquireTimeout())
	h, err := acquire(actx)
	cancel()
	if err != nil {
		c.failed(ctx, op, mode, err)
		return
	}
	c.hold(op, mode, h, h.Done(), func() string { return errString(h.Err()) }, func() error { return release(h) }, h.Fenced, leaseEnded(h))
}

// leaseTime is the lease of the mutex contenders' leased holds.
const leaseTime = 600 * time.Millisecond

// leaseEnded says when h stopped being trusted if its lease ran out: the
// lease's end, which the library's signal follows (the goroutine that
// reports it may be scheduled a moment later, after the node is deleted
// and the next holder granted); 0 otherwise.
func leaseEnded(h *hold.Hold) func() int64 {
	return func() int64 {
		end, ok := h.Expiry()
		if !ok || !errors.Is(h.Err(), zkrecipes.ErrLeaseExpired) {
			return 0
		}
		return min(end.UnixNano(), now())
	}
}

func (c *contender) leaseLoop(ctx context.Context, s *semaphore.Semaphore) {
	for ctx.Err() == nil {
		c.op++
		op := c.op
		c.asking(op, "")
		actx, cancel := context.WithTimeout(ctx, c.acquireTimeout())
		leases, err := s.Acquire(actx, 1)
		cancel()
		if err != nil {
			c.failed(ctx, op, "", err)
			continue
		}
		l := leases[0]
		c.hold(op, "", l, l.Done(), func() string { return errString(l.Err()) }, l.Release, l.Fenced, nil)
	}
}

// latchLoop joins the election, leads for a while, and steps down by
// closing the latch. Half of the latches (keep, drawn with each) stay in
// the election instead when a term ends with a loss signal, on every loss:
// they may lead again with the same node once the session is back, the
// path on which a latch must re-check that its node is still first and
// still its own. The nemesis's delete-node aims at such a leader (see
// deleteTarget), whose latch must then queue anew.
func (c *contender) latchLoop(ctx context.Context) {
	var l *leader.Latch
	defer func() {
		if l != nil {
			_ = l.Close()
		}
	}()
	for ctx.Err() == nil {
		c.op++
		op := c.op
		c.asking(op, "")
		if l == nil {
			c.keep = c.rng.IntN(2) == 0
			var err error
			if l, err = leader.NewLatch(c.client, c.spec.Path, leader.WithParticipantID(c.spec.ID)); err != nil {
				c.emit(Event{Kind: KindAcquireFail, Op: op, Detail: err.Error(), Class: errClassOf(err)})
				return
			}
			if err := l.Start(ctx); err != nil {
				c.failed(ctx, op, "", err)
				_ = l.Close()
				l = nil
				continue
			}
		}
		// The latch stays queued across Await timeouts; a timeout only lets
		// the loop notice ctx.
		var term *hold.Hold
		var err error
		for term == nil && ctx.Err() == nil {
			actx, cancel := context.WithTimeout(ctx, c.acquireTimeout())
			term, err = l.Await(actx)
			cancel()
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				break
			}
		}
		if term == nil {
			if err == nil {
				err = ctx.Err()
			}
			c.failed(ctx, op, "", err)
			_ = l.Close()
			l = nil
			continue
		}
		keep := c.keep
		c.hold(op, "", term, term.Done(), func() string { return errString(term.Err()) }, func() error {
			if keep && term.Err() != nil && ctx.Err() == nil {
				return nil // lost, not given up: stay in the election
			}
			err := l.Close()
			l = nil
			return err
		}, term.Fenced, nil)
	}
}

// selectorLoop runs an auto-requeueing selector whose Func is one hold.
func (c *contender) selectorLoop(ctx context.Context) error {
	// Func runs on the selector's goroutine, one call at a time; current is
	// the op the selector is competing for.
	var mu sync.Mutex
	var current int
	ask := func() {
		mu.Lock()
		defer mu.Unlock()
		c.op++
		current = c.op
		c.asking(current, "")
	}
	asked := func() int {
		mu.Lock()
		defer mu.Unlock()
		return current
	}
	s, err := leader.NewSelector(c.client, c.spec.Path, func(jctx context.Context, term *hold.Hold) error {
		why := func() string {
			if ctx.Err() != nil {
				return "selector closed" // quiesce, not a fault
			}
			return errString(context.Cause(jctx))
		}
		c.hold(asked(), "", term, jctx.Done(), why, func() error { return nil }, nil, nil)
		// Returning gives leadership up, and auto-requeue asks again at once.
		ask()
		return nil
	}, leader.WithAutoRequeue(), leader.WithParticipantID(c.spec.ID), leader.WithErrorHandler(func(error) {}))
	if err != nil {
		return err
	}
	ask()
	// A Start that fails (its first attempt refused under a fault, or ctx
	// ended by the quiesce while it queued) is an acquire that failed, as
	// the latch's: ask again, never exit.
	for ctx.Err() == nil {
		err := s.Start(ctx)
		if err == nil || ctx.Err() != nil {
			break
		}
		c.failed(ctx, asked(), "", err)
		ask()
	}
	<-ctx.Done()
	err = s.Close()
	// The op asked for last never got a term.
	c.emit(Event{Kind: KindAcquireFail, Op: asked(), Detail: "closed", Class: ClassCancelled})
	return err
}

// failed reports an acquire that ended without a hold, and pauses briefly
// after a real error so a broken link is not hammered.
func (c *contender) failed(ctx context.Context, op int, mode string, err error) {
	c.emit(Event{Kind: KindAcquireFail, Op: op, Mode: mode, Detail: err.Error(), Class: errClassOf(err)})
	if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
		sleep(ctx, 50*time.Millisecond)
	}
}

// fencedFunc is hold.Hold.Fenced.
type fencedFunc func(ctx context.Context, ops ...any) ([]zk.MultiResponse, error)

// hold reports a granted hold h (its token, and when the recipe granted
// it), works under it, and releases it. The loss signal is watched on its
// own goroutine so its time is when it fired, not when the work noticed.
// fenced, if not nil, is the hold's Fenced: its work writes the ZooKeeper
// register with it.
func (c *contender) hold(op int, mode string, h *hold.Hold, lossSignal <-chan struct{}, why func() string, release func() error, fenced fencedFunc, ended func() int64) {
	token := h.Token()
	c.emit(Event{Kind: KindAcquireOK, Op: op, Mode: mode, Token: token, Granted: h.Granted().UnixNano(), Session: c.client.Session().ID, Keep: c.keep})
	if c.spec.Register == "" {
		fenced = nil
	}
	releasing := make(chan struct{})
	watched := make(chan struct{})
	work, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(watched)
		select {
		case <-lossSignal:
			cancel()
			select {
			case <-releasing: // the release itself ended the hold
			default:
				e := Event{Kind: KindLoss, Op: op, Detail: why()}
				if ended != nil {
					e.T = ended()
				}
				c.emit(e)
			}
		case <-releasing:
		}
	}()
	c.work(work, op, mode, token, c.spec.Fence != "" && mode != "r", fenced)
	cancel()
	c.emit(Event{Kind: KindReleaseCall, Op: op})
	close(releasing)
	err := release()
	<-watched
	c.emit(Event{Kind: KindReleaseOK, Op: op, Detail: errString(err)})
}

// work is what a holder does: a few steps, each after some thinking, that
// write to the ZooKeeper register through fenced (every hold that has it)
// and to the fenced resource when write is set (readers and semaphore
// leases do not). It checks that the hold is still trusted before each
// step, as careful code does; a pause (SIGSTOP, a long GC) between that
// check and the writes is exactly what fencing is for.
func (c *contender) work(ctx context.Context, op int, mode string, token int64, write bool, fenced fencedFunc) {
	steps := 1 + c.rng.IntN(4)
	// One hold in four outlasts the session timeout several times over, so
	// that link faults meet holders that must notice them: a short hold
	// would end on its own before any loss signal could be due.
	if c.rng.IntN(4) == 0 {
		steps = int(3 * c.spec.SessionTimeout / (100 * time.Millisecond))
	}
	for i := 0; i < steps; i++ {
		// The first step goes at once: a new holder's first write tells the
		// resource its token, as early as it can.
		if i > 0 && !c.think(ctx) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		c.emit(Event{Kind: KindTrusted, Op: op, Token: token})
		// The nemesis may ask for a pause right here, after the check and
		// before the write: the GC pause fencing exists for.
		c.freezePoint()
		if !write && fenced == nil {
			continue
		}
		// Building the request takes a moment, as real work does; a pause
		// that strikes here wakes up to send a write nobody re-checked.
		time.Sleep(30 * time.Millisecond)
		held := true
		if fenced != nil {
			held = c.fencedWrite(op, mode, token, fenced)
		}
		if write && !c.write(token) {
			return // the resource says someone newer holds it
		}
		if !held {
			return // ZooKeeper says the hold is gone
		}
	}
}

// fencedWrite adds one node to the register through the hold's Fenced,
// and reports the outcome; false when the hold is lost. Its context is
// not the work's, which a loss signal cancels: a holder that lost its hold
// and writes anyway is what the register must refuse.
func (c *contender) fencedWrite(op int, mode string, token int64, fenced fencedFunc) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := fenced(ctx, &zk.CreateRequest{
		Path: c.spec.Register + "/w-", Data: registerData(token, c.spec.ID, op, mode), Flags: zk.FlagSequence,
	})
	if err != nil {
		c.emit(Event{Kind: KindFenced, Op: op, Mode: mode, Token: token, Detail: err.Error(), Class: errClassOf(err)})
		return !errors.Is(err, zkrecipes.ErrHoldLost)
	}
	c.emit(Event{Kind: KindFenced, Op: op, Mode: mode, Token: token, Accepted: true, Detail: res[0].String})
	return true
}

// think waits 20-150ms, or until ctx ends (false).
func (c *contender) think(ctx context.Context) bool {
	d := 20*time.Millisecond + time.Duration(c.rng.IntN(130))*time.Millisecond
	if !sleep(ctx, d) {
		return false
	}
	return ctx.Err() == nil
}

// write sends one write to the fenced resource; false when it was refused.
func (c *contender) write(token int64) bool {
	u := c.spec.Fence + "?" + url.Values{"client": {c.spec.ID}, "token": {strconv.FormatInt(token, 10)}}.Encode()
	resp, err := c.http.Post(u, "text/plain", nil)
	if err != nil {
		return true // the resource's own problem; the hold stands
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// acquireTimeout: mostly short and random, so that timed-out waiters must
// leave no node behind; one ask in three waits a minute, so that a waiter
// that misses its wake-up stalls the queue instead of timing out and
// queueing again unnoticed.
func (c *contender) acquireTimeout() time.Duration {
	if c.rng.IntN(3) == 0 {
		return time.Minute
	}
	return 500*time.Millisecond + time.Duration(c.rng.IntN(4000))*time.Millisecond
}

// asking reports an acquire call, and first the session if it is new, so
// the orchestrator knows every session a killed contender may have left.
func (c *contender) asking(op int, mode string) {
	if s := c.client.Session().ID; s != c.session && s != 0 {
		c.session = s
		c.emit(Event{Kind: KindSession, Session: s})
	}
	c.emit(Event{Kind: KindAcquireCall, Op: op, Mode: mode})
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// stopHere stops the process before the calling goroutine runs on. A
// SIGSTOP sent to the process may be taken by another thread, and this one
// runs on (in one short run it released and asked again before it stopped);
// sent to this thread, it is taken on the way back from the syscall.
func stopHere() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}

// freezePoint stops this process here (SIGSTOP) if the nemesis asked for
// a freeze: the point where a pause does the most harm.
func (c *contender) freezePoint() {
	c.freezeMu.Lock()
	if !c.freeze {
		c.freezeMu.Unlock()
		return
	}
	c.freeze = false
	c.emit(Event{Kind: KindFreezing})
	c.freezeMu.Unlock()
	stopHere()
}

// startRetrying calls start, each time for at most 10 s, until it succeeds
// (true) or ctx ends (false): a recipe's Start under the nemesis may fail
// for as long as a fault lasts.
func startRetrying(ctx context.Context, start func(context.Context) error, what string) bool {
	for {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := start(sctx)
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		fmt.Fprintf(os.Stderr, "chaos contender: %s: %v\n", what, err)
	}
}
