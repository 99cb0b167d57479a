package framework

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/goid"
	"github.com/zkrecipes/zkrecipes/retry"
)

// RetryPolicy returns the policy the client retries its requests under
// (WithRetryPolicy); a recipe's background loops pace their retries by it
// too, through Runtime.Pacer, unless the recipe was given its own.
func (c *Client) RetryPolicy() retry.Policy { return c.retry }

// Runtime is the lifecycle of one recipe value, written once for every
// recipe of the module and for a recipe of your own: its started and
// closed state and the checks every call makes against it, a Start that
// undoes a failed start, an idempotent Close bounded by the client's
// release timeout (CloseAfter, for a recipe whose background work passes
// last words on, refuses new calls before it drains, then ends that
// work), the background work that Close waits for, and the pacing of
// retries under a retry.Policy. Every error it returns names
// the recipe and its path (a *RecipeError).
//
// A recipe makes one with NewRuntime in its constructor, keeps it, and
// begins each method with Check or Ready (after its own nil check, which
// Invalid words), or with Within if the call may wait. Its methods may be
// called from any goroutine.
type Runtime struct {
	client *Client
	recipe string
	path   string
	policy retry.Policy

	// startMu serialises Start and Close, so that Close waits for a Start
	// under way and a Start never begins after Close.
	startMu sync.Mutex
	mu      sync.Mutex
	started bool
	closed  bool               // calls refused (Close has begun)
	ended   bool               // Close's drain is over: Go starts nothing
	halting bool               // halt waits: Go starts nothing
	abort   context.CancelFunc // ends the context of a Start's begin under way
	life    context.Context    // of the running background work; nil when none runs
	stop    func()             // ends life
	wg      sync.WaitGroup     // the background work; Add under mu
	tasks   map[int64]struct{} // goroutine ids of the tasks running; under mu
}

// NewRuntime returns the runtime of the recipe named recipe (as "cache"
// or "double barrier") at path, on client. Its background loops pace
// their retries by the client's RetryPolicy.
func NewRuntime(client *Client, recipe, path string) *Runtime {
	return &Runtime{client: client, recipe: recipe, path: path, policy: client.RetryPolicy()}
}

// WithPolicy has r's background loops pace their retries by p rather than
// by the client's policy, and returns r. Call it before any work begins.
func (r *Runtime) WithPolicy(p retry.Policy) *Runtime {
	r.policy = p
	return r
}

// Client returns the client the recipe runs on.
func (r *Runtime) Client() *Client { return r.client }

// Path returns the recipe's path; "" for a nil Runtime.
func (r *Runtime) Path() string {
	if r == nil {
		return ""
	}
	return r.path
}

// Err returns err naming the recipe and its path (see RecipeErr), or nil
// for nil.
func (r *Runtime) Err(err error) error { return RecipeErr(r.recipe, r.path, err) }

// Invalid is the error of a call on a nil or zero recipe value, without a
// Runtime: it names the recipe, wraps zkrecipes.ErrInvalidArgument, and
// says which constructor makes a usable one (as "a nil or zero Cache: make
// one with New").
func Invalid(recipe, typ, ctor string) error {
	return RecipeErr(recipe, "", fmt.Errorf("%w: a nil or zero %s: make one with %s", zkrecipes.ErrInvalidArgument, typ, ctor))
}

// Check is the check of a call that does not need Start: a nil ctx wraps
// zkrecipes.ErrNilContext, a recipe or client closed zkrecipes.ErrClosed.
// A call that takes no context passes context.Background(). It sends
// nothing.
func (r *Runtime) Check(ctx context.Context) error {
	if ctx == nil {
		return r.Err(zkrecipes.ErrNilContext)
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed || r.client.Closed() {
		return r.Err(zkrecipes.ErrClosed)
	}
	return nil
}

// Ready is Check for a call that needs Start first: before Start (or
// after a Start that failed) it wraps zkrecipes.ErrNotStarted.
func (r *Runtime) Ready(ctx context.Context) error {
	if ctx == nil {
		return r.Err(zkrecipes.ErrNilContext)
	}
	r.mu.Lock()
	closed, started := r.closed, r.started
	r.mu.Unlock()
	switch {
	case closed:
		return r.Err(zkrecipes.ErrClosed)
	case !started:
		return r.Err(zkrecipes.ErrNotStarted)
	case r.client.Closed():
		return r.Err(zkrecipes.ErrClosed)
	}
	return nil
}

// Within is Check for a call that may wait (an Acquire in a queue, a
// compare-and-set that retries): after Check's checks it returns a
// context that ends with ctx, at Close of the recipe, or at Close of its
// client, whichever comes first, and its cancel, which the caller calls
// when the call returns. Close ends these contexts before it runs its
// release, so that a call in progress sees its context end, and Closed
// (or the client's) tells it that this is why: a recipe says
// zkrecipes.ErrClosed then.
//
// It costs one context.WithCancel: no goroutine, nothing registered with
// the client per call or per recipe: a call's entry in its client's list
// of calls in progress is dropped at the list's next pruning once the call
// has returned, so that the list holds at most twice its peak of calls
// under way.
func (r *Runtime) Within(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if ctx == nil {
		return nil, nil, r.Err(zkrecipes.ErrNilContext)
	}
	if r.client.Closed() {
		return nil, nil, r.Err(zkrecipes.ErrClosed)
	}
	cctx, cancel := context.WithCancel(ctx)
	if !r.client.calls.enter(r, cctx, cancel) {
		cancel()
		return nil, nil, r.Err(zkrecipes.ErrClosed)
	}
	return cctx, cancel, nil
}

// calls is one client's calls under Within (Client.calls; the zero value
// is ready): the contexts its Close, or their recipe's, ends. A call's entry stays after it returns (its cancel
// is the caller's to call, and wraps nothing of ours) until a later enter
// finds its context done and drops it: the list is pruned when it is full,
// and grown so that it is at most half full after, which keeps the cost
// per call constant.
type calls struct {
	mu    sync.Mutex
	ended bool // the client closed
	list  []call
}

type call struct {
	r      *Runtime
	ctx    context.Context
	cancel context.CancelFunc
}

// enter adds a call of r, unless r or the client is closed. The check and
// the add are one step under cs.mu, and end (a Close) takes cs.mu after
// it has marked r closed: a call either is in the list when Close ends
// the list's calls of r, or sees r closed.
func (cs *calls) enter(r *Runtime, ctx context.Context, cancel context.CancelFunc) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.ended || r.Closed() {
		return false
	}
	if len(cs.list) == cap(cs.list) {
		cs.list = slices.DeleteFunc(cs.list, func(c call) bool { return c.ctx.Err() != nil })
		cs.list = slices.Grow(cs.list, len(cs.list)+1)
	}
	cs.list = append(cs.list, call{r: r, ctx: ctx, cancel: cancel})
	return true
}

// end ends the calls of r, or every call for nil (the client closed), and
// forgets them.
func (cs *calls) end(r *Runtime) {
	cs.mu.Lock()
	var ending []call
	if r == nil {
		cs.ended = true
		ending, cs.list = cs.list, nil
	} else {
		for _, c := range cs.list {
			if c.r == r {
				ending = append(ending, c)
			}
		}
		cs.list = slices.DeleteFunc(cs.list, func(c call) bool { return c.r == r })
	}
	cs.mu.Unlock()
	for _, c := range ending {
		c.cancel()
	}
}

// Started reports whether a Start succeeded.
func (r *Runtime) Started() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

// Closed reports whether Close was called on the recipe (Check also sees
// the client's).
func (r *Runtime) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Start runs begin, the recipe's start, and marks the recipe started if it
// returns nil. begin gets a context that ends with ctx or when the recipe
// or its client closes; it starts the recipe's background work with Go,
// and returns once the recipe has joined (nil), has failed, or its context
// is done (its error). If begin fails, Start ends the background work it
// started and waits for it before it returns, so that nothing keeps running
// and Start may be called again.
//
// Before begin runs, a nil ctx wraps zkrecipes.ErrNilContext, a second
// Start after one succeeded zkrecipes.ErrStarted, a closed recipe or client
// zkrecipes.ErrClosed, and a done ctx its error. A begin that fails because
// Close came meanwhile fails Start with zkrecipes.ErrClosed.
func (r *Runtime) Start(ctx context.Context, begin func(ctx context.Context) error) error {
	if ctx == nil {
		return r.Err(zkrecipes.ErrNilContext)
	}
	if r.Closed() {
		// Not behind startMu, which a Close holds through its drain.
		return r.Err(zkrecipes.ErrClosed)
	}
	r.startMu.Lock()
	defer r.startMu.Unlock()
	// The checks and the life under one lock: a Close that comes after
	// them ends this life, so that begin cannot outlast it.
	r.mu.Lock()
	var refused error
	switch {
	case r.closed:
		refused = zkrecipes.ErrClosed
	case r.started:
		refused = zkrecipes.ErrStarted
	case r.client.Closed():
		refused = zkrecipes.ErrClosed
	default:
		refused = ctx.Err()
	}
	if refused != nil {
		r.mu.Unlock()
		return r.Err(refused)
	}
	life := r.lifeLocked()
	bctx, cancel := context.WithCancel(HandOff(ctx))
	r.abort = cancel
	r.mu.Unlock()
	defer cancel()
	stop := context.AfterFunc(life, cancel)
	defer stop()
	err := begin(bctx)
	r.mu.Lock()
	r.abort = nil
	r.started = err == nil
	r.mu.Unlock()
	if err == nil {
		return nil
	}
	r.halt()
	switch {
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// begin's own words, when they say ctx ended, say more (which
		// step it was on, what the server had said).
		return r.Err(err)
	case ctx.Err() != nil && errors.Is(err, context.Cause(bctx)):
		return r.Err(ctx.Err())
	case (r.Closed() || r.client.Closed()) && errors.Is(err, context.Canceled):
		// begin saw its context end because the recipe or client closed.
		return r.Err(zkrecipes.ErrClosed)
	}
	return r.Err(err)
}

// lifeLocked returns the context of the background work, made if none
// runs: it ends at Close of the recipe or of its client. Under mu, not
// closed.
func (r *Runtime) lifeLocked() context.Context {
	if r.life == nil {
		life, cancel := context.WithCancel(HandOff(context.Background()))
		remove := r.client.OnClose(cancel)
		r.life, r.stop = life, func() { cancel(); remove() }
	}
	return r.life
}

// halt ends the background work and waits for it. While it waits, Go
// starts nothing: work that a halted task would start must not outlive
// the halt under a fresh context.
func (r *Runtime) halt() {
	r.mu.Lock()
	stop := r.stop
	r.life, r.stop = nil, nil
	r.halting = true
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
	r.wg.Wait()
	r.mu.Lock()
	r.halting = false
	r.mu.Unlock()
}

// Go runs f as the recipe's background work, on a goroutine of its own,
// and reports true; Close ends f's context and waits for f to return (the
// client's Close ends f's context too, without waiting: f may be a user's
// function that closes the client). Once the recipe's Close has run its
// drain (CloseAfter), or its client is closed, it runs nothing and reports
// false; during the drain it still runs f, whose context then ends with
// the rest. f must return soon after its context ends.
//
// Unlike Client.Go, f never runs on a goroutine that ran other work: what
// is kept per goroutine (a reentrant lock's ownership, which follows
// Curator's per-thread rule) cannot pass from one task to the next, so a
// user's function a recipe runs here (a selector's Func, a partitioner's
// worker) holds only what it acquired itself.
func (r *Runtime) Go(f func(life context.Context)) bool {
	r.mu.Lock()
	if r.ended || r.halting {
		r.mu.Unlock()
		return false
	}
	life := r.lifeLocked()
	r.wg.Add(1)
	r.mu.Unlock()
	if !r.client.spawn(func() { defer r.wg.Done(); r.task(life, f) }) {
		r.wg.Done()
		return false
	}
	return true
}

// task runs f as one of r's tasks: while it runs, its goroutine is known
// as one, so that a Close it calls does not wait for it (see CloseAfter).
func (r *Runtime) task(life context.Context, f func(context.Context)) {
	id := goid.Current()
	r.mu.Lock()
	if r.tasks == nil {
		r.tasks = map[int64]struct{}{}
	}
	r.tasks[id] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.tasks, id)
		r.mu.Unlock()
	}()
	f(life)
}

// inTask reports whether the caller runs on one of r's tasks.
func (r *Runtime) inTask() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.tasks) == 0 {
		return false
	}
	_, ok := r.tasks[goid.Current()]
	return ok
}

// Close closes the recipe once: it ends the contexts of the calls in
// progress under Within, ends the background work and waits for it
// (behind a Start under way), then runs release, if not nil, with a
// context bounded by the client's ReleaseTimeout, for what the recipe
// must undo on the server (its node, say). Closed reports true from the
// start of Close: a recipe that hands something out (a hold) checks Closed
// and records what it hands out under a lock of its own, and its release
// empties the record under that lock, so that each thing handed out is
// either released by Close or refused. It returns release's error, named;
// a second Close returns nil at once. It is CloseAfter without a drain.
func (r *Runtime) Close(release func(ctx context.Context) error) error {
	return r.CloseAfter(nil, release)
}

// CloseAfter is Close for a recipe whose background work has last words
// to pass on before it ends: first it refuses every new call (Check,
// Ready, Within and Start say zkrecipes.ErrClosed, Closed reports true),
// ends the calls under Within and a Start under way and waits for that
// Start; then it runs drain, if not nil, while the background work still
// runs (Go still starts more), with a context bounded by the client's
// ReleaseTimeout; and only then ends the background work, waits for it,
// and runs release as Close does. A recipe whose Close stops what it
// keeps (its registrations, say) while its tasks still tell subscribers
// what became of it keeps no closed flag of its own: whatever it adds
// under its lock after checking Closed there, its drain finds under that
// lock. It returns drain's and release's errors, named; a second Close or
// CloseAfter returns nil at once.
//
// Called from one of the recipe's own tasks (a selector's Func that gives
// up leading for good), it cannot wait for that task, which is its
// caller: it refuses new calls and returns nil at once; the rest of the
// Close (the drain, the end of the work's contexts, the wait for the tasks,
// the release) runs on a goroutine of its own and is over soon after the
// calling task returns; an error of it is logged.
func (r *Runtime) CloseAfter(drain, release func(ctx context.Context) error) error {
	abort, first := r.refuse()
	if !first {
		return nil
	}
	if r.inTask() {
		go func() {
			if err := r.finishClose(abort, drain, release); err != nil {
				r.client.Logger().Warn("zookeeper "+r.recipe+": closing", "path", r.path, "err", err)
			}
		}()
		return nil
	}
	return r.finishClose(abort, drain, release)
}

// refuse is the first step of Close: from now on every new call is
// refused. It returns the cancel of a Start's begin under way, and false
// if Close had begun already.
func (r *Runtime) refuse() (abort context.CancelFunc, first bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false
	}
	r.closed = true
	return r.abort, true
}

// finishClose is the rest of Close, after refuse.
func (r *Runtime) finishClose(abort context.CancelFunc, drain, release func(ctx context.Context) error) error {
	// Calls in progress under Within end before anything is released (a
	// Within after this sees closed: see calls.enter).
	r.client.calls.end(r)
	// A Start under way ends (and undoes itself) before the drain, which
	// never runs beside a begin.
	if abort != nil {
		abort()
	}
	r.startMu.Lock()
	drained := r.bounded(drain)
	r.mu.Lock()
	r.ended = true
	r.mu.Unlock()
	r.halt()
	r.startMu.Unlock()
	err := r.bounded(release)
	if drained != nil {
		err = errors.Join(drained, err)
	}
	return r.Err(err)
}

// bounded runs step, if not nil, with a context bounded by the client's
// ReleaseTimeout.
func (r *Runtime) bounded(step func(ctx context.Context) error) error {
	if step == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.client.ReleaseTimeout())
	defer cancel()
	return step(ctx)
}

// Pacer returns a pacer for one of the recipe's background loops: Wait
// after a failed attempt sleeps the policy's next pause, Reset after one
// that succeeded starts the schedule over. See retry.Pacer.
func (r *Runtime) Pacer() *retry.Pacer { return r.policy.Pacer() }

// Loop runs step again and again until ctx ends: the one watch, wait and
// retry loop of a recipe that follows the server. step reads what it
// follows, sets its watches and waits for one to fire (or ctx to end),
// and returns nil; or it fails, and Loop logs the error and sleeps the
// pacer's next pause before it runs step again. A step that succeeds
// starts the pauses over. A nil ctx counts as ended: Loop returns at once.
func (r *Runtime) Loop(ctx context.Context, step func(ctx context.Context) error) {
	if ctx == nil {
		return
	}
	pacer := r.Pacer()
	for ctx.Err() == nil {
		if err := step(ctx); err != nil {
			if ctx.Err() != nil || !r.Retry(ctx, pacer, err) {
				return
			}
			continue
		}
		pacer.Reset()
	}
}

// Retry logs err, the failure of an attempt of one of the recipe's
// background loops, and sleeps pacer's next pause; it reports false,
// without sleeping it out, if ctx ends first (a nil ctx counts as ended).
func (r *Runtime) Retry(ctx context.Context, pacer *retry.Pacer, err error) bool {
	r.client.Logger().Debug("zookeeper "+r.recipe+": will try again", "path", r.path, "err", err)
	return pacer.Wait(ctx)
}

// spawn runs f on a new goroutine, and reports true; once Close has begun
// it runs nothing and reports false. The client's Close does not wait for
// f: its recipe's Close does (Runtime.Close), and the client's Close ends
// f's context first thing. f may run a user's function, which may call
// the client's Close itself: a Close that waited for f would wait for its
// own caller.
func (c *Client) spawn(f func()) bool {
	c.spawnMu.Lock()
	defer c.spawnMu.Unlock()
	if c.stopped {
		return false
	}
	go f()
	return true
}
