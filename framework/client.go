package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/connlink"
	"github.com/zkrecipes/zkrecipes/internal/errs"
	"github.com/zkrecipes/zkrecipes/internal/fwlink"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/retry"
)

// ErrorPolicy says from which connection state on a recipe must stop
// trusting what it holds, as Curator's ConnectionStateErrorPolicy.
type ErrorPolicy int

const (
	// StandardPolicy: from Suspended on. The client notices a dead link at
	// 2/3 of the session timeout, before the server can expire the session,
	// so a holder stops before anyone else can be granted what it held.
	StandardPolicy ErrorPolicy = iota
	// SessionOnlyPolicy: only from Lost on. Holds survive short link
	// failures, at the price that a holder cut off from the ensemble may
	// still believe it holds a lock that the server has already given away.
	SessionOnlyPolicy
)

func (p ErrorPolicy) String() string {
	if p == SessionOnlyPolicy {
		return "session-only"
	}
	return "standard"
}

// Signal returns the channel of s that closes when, under this policy, what
// was built on s can no longer be trusted.
func (p ErrorPolicy) Signal(s conn.Session) <-chan struct{} {
	if p == SessionOnlyPolicy {
		return s.Lost
	}
	return s.Suspended
}

// Option configures a Client.
type Option func(*options)

type options struct {
	namespace   string
	acl         ACLProvider
	retry       retry.Policy
	errPolicy   ErrorPolicy
	log         *slog.Logger
	connOpts    []conn.Option
	drain       time.Duration
	deleteRetry time.Duration
	meters      metric.MeterProvider
	pathAttr    bool
	maxRequest  int
}

// WithNamespace prefixes every path with ns ("app" or "/app/sub"), as
// Curator's namespace. The namespace node is created when first needed.
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// WithACLProvider sets who may do what to the nodes the client creates
// (default OpenACL).
func WithACLProvider(p ACLProvider) Option { return func(o *options) { o.acl = p } }

// WithRetryPolicy sets how operations are retried on connection trouble
// (default retry.Default()).
func WithRetryPolicy(p retry.Policy) Option { return func(o *options) { o.retry = p } }

// WithErrorPolicy sets when recipes stop trusting their holds (default
// StandardPolicy).
func WithErrorPolicy(p ErrorPolicy) Option { return func(o *options) { o.errPolicy = p } }

// WithLogger logs through l (default: silent).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithMeterProvider makes the client's metrics, and its recipes', with mp
// (default: otel.GetMeterProvider(), the global provider, which records
// nothing until the application installs one). The library never picks an
// exporter; the instruments are listed in the README ("Running in
// production").
func WithMeterProvider(mp metric.MeterProvider) Option { return func(o *options) { o.meters = mp } }

// WithMetricPathAttribute adds the recipe's path (its lock directory, latch
// or semaphore path) as the attribute "path" to the recipes' instruments
// (default false). Each path is a time series of its own: leave it off
// where paths are many, a lock per entity for instance.
func WithMetricPathAttribute(on bool) Option { return func(o *options) { o.pathAttr = on } }

// WithConnOptions passes options to conn.Dial, for Dial.
func WithConnOptions(opts ...conn.Option) Option {
	return func(o *options) { o.connOpts = append(o.connOpts, opts...) }
}

// WithDrainTimeout sets how long Close waits for background deletes to
// finish before abandoning them (default 5s; 0 abandons at once).
func WithDrainTimeout(d time.Duration) Option { return func(o *options) { o.drain = d } }

// Client is the framework over one session. It is safe for concurrent use.
type Client struct {
	conn      *conn.Conn
	ownsConn  bool
	ns        namespace
	acl       ACLProvider
	retry     retry.Policy
	errPolicy ErrorPolicy
	log       *slog.Logger
	drain     time.Duration
	// maxRequest is the largest request sent (WithMaxRequestSize).
	maxRequest int

	metrics   *metrics.Client // the client's instruments, never nil
	unobserve func()          // stops counting the connection's changes

	nsMu    sync.Mutex
	nsReady bool

	deleter *deleter
	listers listers
	heads   fwlink.Heads // see fwlink.Heads

	// Ephemeral nodes this client made and has not seen deleted, by path
	// (without namespace), with the session that made each. A client over a
	// connection it does not own deletes them at Close: the session lives
	// on, and so would they.
	ephMu      sync.Mutex
	ephemerals map[string]int64
	swept      bool // Close swept ephemerals: later creates clean up after themselves

	// What must learn of Close before anything else happens (a hold's
	// loss signal): called first thing in Close.
	closersMu sync.Mutex
	closers   map[*func()]struct{}

	closed  atomic.Bool
	quit    chan struct{}   // closed by Close: stops background work
	life    context.Context // cancelled by Close: ends background calls
	stop    context.CancelFunc
	spawnMu sync.Mutex // orders spawn's wg.Add before Close's wg.Wait
	stopped bool
	wg      sync.WaitGroup // the workers (see spawn)
	// idle is the workers waiting for a task, the most recently idle
	// last (see spawn). Guarded by spawnMu.
	idle []*worker
}

// Dial connects to servers (see conn.Dial) and returns a Client that owns the
// connection: Close closes it.
func Dial(ctx context.Context, servers []string, opts ...Option) (*Client, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	connOpts := append([]conn.Option{conn.WithLogger(o.log)}, o.connOpts...)
	c, err := conn.Dial(ctx, servers, connOpts...)
	if err != nil {
		return nil, err
	}
	cl := newClient(c, true, o)
	cl.countFirstSession()
	return cl, nil
}

// countFirstSession counts the session the connection had before the
// client could watch it, as its first: the client's metrics start there.
func (c *Client) countFirstSession() {
	id := c.conn.Session().ID
	if id == 0 {
		return // not connected yet: the connection will report it
	}
	first := conn.StateConnected
	if c.conn.State() == conn.StateReadOnly {
		first = conn.StateReadOnly
	}
	c.metrics.StateChange(conn.Event{State: first, SessionID: id, NewSession: true})
}

// New returns a Client over an existing connection, which it does not own:
// Close leaves c open.
func New(c *conn.Conn, opts ...Option) (*Client, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil conn", ErrInvalidArgument)
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	cl := newClient(c, false, o)
	cl.countFirstSession()
	return cl, nil
}

func buildOptions(opts []Option) (options, error) {
	o := options{
		acl:         OpenACL(),
		retry:       retry.Default(),
		log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		drain:       5 * time.Second,
		deleteRetry: time.Second,
		meters:      otel.GetMeterProvider(),
		maxRequest:  DefaultMaxRequestSize,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	switch {
	case o.acl == nil:
		return o, fmt.Errorf("%w: nil ACL provider", ErrInvalidArgument)
	case o.log == nil:
		return o, fmt.Errorf("%w: nil logger", ErrInvalidArgument)
	case o.meters == nil:
		return o, fmt.Errorf("%w: nil meter provider", ErrInvalidArgument)
	case o.errPolicy != StandardPolicy && o.errPolicy != SessionOnlyPolicy:
		return o, fmt.Errorf("%w: error policy %d", ErrInvalidArgument, o.errPolicy)
	case o.drain < 0:
		return o, fmt.Errorf("%w: drain timeout %v", ErrInvalidArgument, o.drain)
	case o.maxRequest < 1 || o.maxRequest > maxSendable:
		return o, fmt.Errorf("%w: max request size %d: must be between 1 and %d (go-zookeeper's send buffer)",
			ErrInvalidArgument, o.maxRequest, maxSendable)
	}
	if o.namespace != "" {
		ns := "/" + strings.TrimPrefix(o.namespace, "/")
		if err := ValidatePath(ns); err != nil || ns == "/" {
			return o, fmt.Errorf("%w: namespace %q", ErrInvalidArgument, o.namespace)
		}
		o.namespace = ns
	}
	return o, nil
}

func newClient(c *conn.Conn, owns bool, o options) *Client {
	cl := &Client{
		conn:       c,
		ownsConn:   owns,
		ns:         namespace(o.namespace),
		acl:        o.acl,
		retry:      o.retry,
		errPolicy:  o.errPolicy,
		log:        o.log,
		drain:      o.drain,
		maxRequest: o.maxRequest,
		quit:       make(chan struct{}),
		ephemerals: map[string]int64{},
	}
	cl.life, cl.stop = context.WithCancel(context.Background())
	cl.deleter = newDeleter(cl, o.deleteRetry)
	m, err := metrics.New(o.meters, o.pathAttr, metrics.Observed{
		Connected:      func() bool { return cl.State().IsConnected() },
		PendingDeletes: cl.deleter.count,
	})
	if err != nil {
		cl.log.Warn("zookeeper client: some metrics will not be recorded", "err", err)
	}
	cl.metrics = m
	cl.unobserve = connlink.Of(c).Observe(func(ev any) { m.StateChange(ev.(conn.Event)) })
	return cl
}

// The connection itself is not handed out: its Close would end the session
// behind the client's back, before the client's holds learn of it (the
// client's Close ends them first). What a user may ask of it is here.

// State returns the connection's state (see conn.Conn.State), or
// StateClosed once the client is closed, even over a connection that lives
// on.
func (c *Client) State() conn.State {
	if c.Closed() {
		return conn.StateClosed
	}
	return c.conn.State()
}

// Subscribe returns a subscription to the connection's state changes (see
// conn.Conn.Subscribe).
func (c *Client) Subscribe() *conn.Subscription { return c.conn.Subscribe() }

// WaitConnected waits until the connection is connected, or ctx ends, and
// returns the session (see conn.Conn.WaitConnected). On a closed client it
// returns ErrClosed.
func (c *Client) WaitConnected(ctx context.Context) (conn.Session, error) {
	if ctx == nil {
		return conn.Session{}, opErr("wait connected", "", errs.ErrNilContext)
	}
	if c.Closed() {
		return conn.Session{}, ErrClosed
	}
	return c.conn.WaitConnected(ctx)
}

// Namespace returns the namespace ("" or "/app").
func (c *Client) Namespace() string { return string(c.ns) }

// ErrorPolicy returns the client's error policy.
func (c *Client) ErrorPolicy() ErrorPolicy { return c.errPolicy }

// Logger returns the client's logger, for recipes.
func (c *Client) Logger() *slog.Logger { return c.log }

// Session returns the current session (see conn.Conn.Session).
func (c *Client) Session() conn.Session { return c.conn.Session() }

// lossSignal returns the channel of s that closes when, under the client's
// error policy, what was built on s can no longer be trusted.
func (c *Client) lossSignal(s conn.Session) <-chan struct{} { return c.errPolicy.Signal(s) }

// Closed reports whether Close was called.
func (c *Client) Closed() bool { return c.closed.Load() }

// Close waits up to the drain timeout for background deletes, abandons the
// rest (logging each), stops every goroutine of the client and, if the client
// owns its connection, closes it. Abandoned deletes of ephemeral nodes of the
// client's own session still happen: closing the session removes them.
//
// A client over a connection it does not own (New) cannot end the session,
// so it deletes the ephemeral nodes it made that are still there (a held
// lock, a queued contender), within the drain timeout (at least a second),
// before it returns: nothing it created outlives it while the session
// lives. Recipes' holds on such nodes report the loss.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	// Holds on this client's nodes end before anything else: the drain and
	// the sweep below delete nodes, and no other session may be granted a
	// lock while a hold of ours still looks held.
	c.closersMu.Lock()
	closers := c.closers
	c.closers = nil
	c.closersMu.Unlock()
	for f := range closers {
		(*f)()
	}
	if c.drain > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.drain)
		_ = c.deleter.drain(ctx)
		cancel()
	}
	if !c.ownsConn {
		c.sweepEphemerals()
	}
	c.spawnMu.Lock()
	c.stopped = true
	c.spawnMu.Unlock()
	close(c.quit)
	c.stop()
	c.deleter.abandon()
	c.unobserve()
	c.metrics.Close()
	if c.ownsConn {
		c.conn.Close() // ends in-flight calls with zk.ErrClosing
	}
	c.wg.Wait()
	return nil
}

// onClose registers f to run at the start of Close (at once if the client
// is closed already) and returns a function that unregisters it.
func (c *Client) onClose(f func()) (remove func()) {
	p := &f
	c.closersMu.Lock()
	if c.closed.Load() {
		c.closersMu.Unlock()
		f()
		return func() {}
	}
	if c.closers == nil {
		c.closers = map[*func()]struct{}{}
	}
	c.closers[p] = struct{}{}
	c.closersMu.Unlock()
	return func() {
		c.closersMu.Lock()
		delete(c.closers, p)
		c.closersMu.Unlock()
	}
}

// remember records an ephemeral node made by session owner. It reports
// false once Close has swept the record: nobody will delete the node then,
// so the caller must.
func (c *Client) remember(path string, owner int64) bool {
	c.ephMu.Lock()
	defer c.ephMu.Unlock()
	if c.swept {
		return false
	}
	if len(c.ephemerals) >= 1024 {
		// Nodes of earlier sessions went with them; a client whose callers
		// never delete their own nodes must not grow without bound.
		for p, o := range c.ephemerals {
			if o != owner {
				delete(c.ephemerals, p)
			}
		}
	}
	c.ephemerals[path] = owner
	return true
}

// forget drops path from the record: it is deleted, or not ours.
func (c *Client) forget(path string) {
	c.ephMu.Lock()
	delete(c.ephemerals, path)
	c.ephMu.Unlock()
}

// sweepEphemerals deletes the recorded ephemeral nodes that the current
// session still owns.
//
// A create still in flight may land after the sweep; remember then refuses
// it and the create deletes its node itself (deleteUnswept).
func (c *Client) sweepEphemerals() {
	c.ephMu.Lock()
	nodes := c.ephemerals
	c.ephemerals = map[string]int64{}
	c.swept = true
	c.ephMu.Unlock()
	session := c.conn.Session().ID
	ctx, cancel := context.WithTimeout(context.Background(), max(c.drain, time.Second))
	defer cancel()
	for path, owner := range nodes {
		if owner != session {
			continue // gone with its session
		}
		c.deleteEphemeral(ctx, path, owner)
	}
}

// deleteUnswept deletes an ephemeral node whose create was answered after
// Close swept the client's record. Close may have stopped the client's
// goroutines, so the calls run on the caller's (a context without Done does
// that; the connection bounds each call by its receive timeout), and a
// failure is retried, as a guaranteed delete is, until the node or its
// session is gone, or the bound passes.
func (c *Client) deleteUnswept(path string, owner int64) {
	deadline := time.Now().Add(max(c.drain, 5*time.Second))
	pause := 50 * time.Millisecond
	for {
		err := c.deleteIfOwned(context.Background(), path, owner)
		if err == nil || c.conn.Session().ID != owner {
			return
		}
		if time.Now().After(deadline) {
			c.logUndeleted(path, owner, err)
			return
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Second)
	}
}

// deleteEphemeral deletes path if session owner still owns it, and logs
// what it could not delete.
func (c *Client) deleteEphemeral(ctx context.Context, path string, owner int64) {
	if err := c.deleteIfOwned(ctx, path, owner); err != nil {
		c.logUndeleted(path, owner, err)
	}
}

// deleteIfOwned deletes path if session owner still owns it: a node of the
// same name made by anyone else is left alone.
func (c *Client) deleteIfOwned(ctx context.Context, path string, owner int64) error {
	_, err := callValue(c, ctx, func() (struct{}, error) {
		z := c.zk()
		ok, st, err := z.Exists(c.ns.fix(path))
		if err != nil || !ok || st.EphemeralOwner != owner {
			return struct{}{}, err
		}
		err = z.Delete(c.ns.fix(path), st.Version)
		if errors.Is(err, zk.ErrNoNode) {
			err = nil
		}
		return struct{}{}, err
	})
	return err
}

func (c *Client) logUndeleted(path string, owner int64, err error) {
	c.log.Warn("zookeeper client closing: cannot delete its ephemeral node; it stays until the session ends",
		"path", path, "session", fmt.Sprintf("0x%x", owner), "err", err)
}

// Drain waits until every background delete has finished, or ctx ends.
func (c *Client) Drain(ctx context.Context) error {
	if ctx == nil {
		return opErr("drain", "", errs.ErrNilContext)
	}
	return c.deleter.drain(ctx)
}

// PendingDeletes returns the paths the client is still deleting in the
// background.
func (c *Client) PendingDeletes() []string { return c.deleter.pending() }

// do runs op on the current go-zookeeper client under the retry policy.
func (c *Client) do(ctx context.Context, name, path string, op func(z *zk.Conn) error) error {
	_, err := doValue(c, ctx, name, path, func(z *zk.Conn) (struct{}, error) { return struct{}{}, op(z) })
	return err
}

// doValue is do for an operation with a result.
func doValue[T any](c *Client, ctx context.Context, name, path string, op func(z *zk.Conn) (T, error)) (T, error) {
	return doSized(c, ctx, name, path, 0, op)
}

// doSized is doValue for a write whose request is size bytes: one over
// ZooKeeper's default limit is sent at most once (see sentOnce), and an
// error that leaves its outcome unknown says so (see unanswered).
func doSized[T any](c *Client, ctx context.Context, name, path string, size int, op func(z *zk.Conn) (T, error)) (T, error) {
	var out T
	if c.closed.Load() {
		return out, opErr(name, path, ErrClosed)
	}
	if err := ctx.Err(); err != nil && size > DefaultMaxRequestSize {
		return out, opErr(name, path, err) // unsent: not an unknown outcome
	}
	mop, measured := metrics.OpNamed(name)
	err := retry.Do(ctx, c.retry, func(ctx context.Context) error {
		start := time.Now()
		v, err := callValue(c, ctx, func() (T, error) { return op(c.zk()) })
		if measured {
			c.metrics.Request(ctx, mop, time.Since(start), err)
		}
		if err == nil {
			out = v
		}
		return err
	}, sentOnce(size))
	return out, opErr(name, path, unanswered(size, c.closedErr(err)))
}

// callValue runs f, a blocking go-zookeeper call, and returns early if ctx
// ends. f then finishes in the background: go-zookeeper has no
// cancellation, but every request ends with an answer, a connection error,
// or Close. Results come back through a channel, so an abandoned call can
// never write into its caller's variables.
func callValue[T any](c *Client, ctx context.Context, f func() (T, error)) (T, error) {
	return callTracked(c, ctx, nil, f)
}

// callTracked is callValue that counts f in inflight until f returns, so a
// caller that gave up on it can still learn when it is over.
func callTracked[T any](c *Client, ctx context.Context, inflight *sync.WaitGroup, f func() (T, error)) (T, error) {
	var zero T
	if ctx.Done() == nil {
		return f()
	}
	if ctx == c.life {
		// Only Close ends the client's life, and Close waits for every
		// call it spawned to return anyway: a goroutine to abandon f on
		// would cost each background request (a listing, a release's
		// delete) a goroutine and buy nothing.
		if inflight != nil {
			inflight.Add(1)
			defer inflight.Done()
		}
		return f()
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	if inflight != nil {
		inflight.Add(1)
	}
	if !c.spawn(func() {
		if inflight != nil {
			defer inflight.Done()
		}
		// The caller's profiler labels (pprof.Do), as a goroutine of its
		// own would have inherited them.
		pprof.SetGoroutineLabels(ctx)
		v, err := f()
		done <- result{v, err}
	}) {
		if inflight != nil {
			inflight.Done()
		}
		return zero, ErrClosed
	}
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// spawn runs f on a goroutine that Close waits for, unless Close has begun.
//
// The goroutine is one of the client's workers: the most recently idle one
// if any waits, else a new one. A request's goroutine goes through
// go-zookeeper and the retry loop, deeper than a new goroutine's first
// stack: on a fresh goroutine each one grew its stack by copying it (about
// six copies per lock operation, a third of the client's instructions
// under contention, counted with callgrind). A worker keeps the stack it
// grew. The most recent first, so that a light load keeps reusing the same
// few and the rest of a burst's workers run out of time and end; handed
// out in turn, every one of 64 idle workers stayed alive under a hundred
// tasks a second.
func (c *Client) spawn(f func()) bool {
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

// testWorkerIdle, when not zero, replaces workerIdle (tests).
var testWorkerIdle atomic.Int64

// worker is one of a client's worker goroutines, as spawn sees it.
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
			wait := workerIdle
			if d := testWorkerIdle.Load(); d != 0 {
				wait = time.Duration(d)
			}
			tick = time.NewTicker(wait)
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

// idleWorkers is how many workers wait for a task.
func (c *Client) idleWorkers() int {
	c.spawnMu.Lock()
	defer c.spawnMu.Unlock()
	return len(c.idle)
}

// whenDone returns a channel closed once wg's count is zero.
func (c *Client) whenDone(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	if !c.spawn(func() { wg.Wait(); close(ch) }) {
		close(ch) // closing: the deleter is being abandoned, the job with it
	}
	return ch
}

func (c *Client) closedErr(err error) error {
	if err != nil && c.closed.Load() && errors.Is(err, zk.ErrClosing) {
		return errors.Join(ErrClosed, err)
	}
	return err
}

// check validates the context, a path and the client's state before
// anything is sent.
func (c *Client) check(ctx context.Context, op, path string, sequential bool) error {
	if ctx == nil {
		return opErr(op, path, errs.ErrNilContext)
	}
	if c.closed.Load() {
		return opErr(op, path, ErrClosed)
	}
	if err := validatePath(path, sequential); err != nil {
		return opErr(op, path, err)
	}
	return nil
}

func (c *Client) aclFor(path string, explicit []zk.ACL) []zk.ACL {
	if explicit != nil {
		return explicit
	}
	if acl := c.acl.ACLForPath(path); acl != nil {
		return acl
	}
	return c.acl.DefaultACL()
}
