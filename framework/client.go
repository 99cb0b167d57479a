package framework

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/metric"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/participant"
	"github.com/zkrecipes/zkrecipes/internal/session"
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

// Client is the framework over one ZooKeeper session, as Curator's
// CuratorFramework. It is safe for concurrent use. Make one with Dial.
type Client struct {
	conn       *session.Conn
	ns         namespace
	acl        ACLProvider
	retry      retry.Policy
	errPolicy  ErrorPolicy
	log        *slog.Logger
	drain      time.Duration
	release    time.Duration // see WithReleaseTimeout
	expiryPct  int           // see WithSimulatedExpiry
	meters     metric.MeterProvider
	pathAttr   bool
	maxRequest int   // the largest request sent (WithMaxRequestSize)
	calls      calls // under Runtime.Within; Close ends them

	// The recipes' meters by kind, when no path attribute makes each
	// path's its own (see RecipeMeter). Guarded by metersMu.
	metersMu     sync.Mutex
	recipeMeters map[string]*RecipeMeter

	metrics   *metrics.Client // the client's instruments, never nil
	unobserve func()          // stops following the connection's changes
	states    Feed[conn.Event]
	// The state as it stands, for a new subscription's first event;
	// published under statesMu with the feed's values.
	statesMu  sync.Mutex
	lastState conn.Event
	stateSeen bool // lastState came from a change, not the first look

	nsMu    sync.Mutex
	nsReady bool

	deleter *deleter
	listers listers
	router  *router // the watches read Into a Watches queue

	// What must learn of Close before anything else happens (a hold's
	// loss signal): called first thing in Close.
	closersMu sync.Mutex
	closers   map[uint64]func() // by registration, so that f needs no box
	closerID  uint64

	closed  atomic.Bool
	quit    chan struct{}   // closed by Close: stops background work
	life    context.Context // cancelled by Close: ends background calls
	stop    context.CancelFunc
	spawnMu sync.Mutex // orders Go's wg.Add before Close's wg.Wait
	stopped bool
	wg      sync.WaitGroup // the workers (see Go)
	// idle is the workers waiting for a task, the most recently idle
	// last (see Go). Guarded by spawnMu.
	idle []*worker
}

// Dial starts a session with the ensemble at servers ("host:port", the port
// defaulting to 2181; the last may end with ZooKeeper's chroot, as
// "zk3:2181/app", which becomes the client's namespace) and returns a
// Client once the session is established and its credentials accepted.
// It gives up when ctx ends or the dial timeout passes (WithDialTimeout,
// 15 s by default, as Curator's connection timeout), whichever comes
// first, with an error that says how long it tried and why the last
// connection attempt failed (refused, a TLS handshake, a name that does
// not resolve). Close ends the session.
func Dial(ctx context.Context, servers []string, opts ...Option) (*Client, error) {
	if ctx == nil {
		return nil, fmt.Errorf("framework: dial: %w", zkrecipes.ErrNilContext)
	}
	servers, chroot, err := splitChroot(servers)
	if err != nil {
		return nil, fmt.Errorf("framework: dial: %w", err)
	}
	if chroot != "" {
		opts = append([]Option{WithNamespace(chroot)}, opts...)
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	if chroot != "" && o.namespace != "/"+strings.TrimPrefix(chroot, "/") {
		return nil, fmt.Errorf("framework: dial: %w: the servers name a chroot (%s) and WithNamespace another (%s): give one",
			zkrecipes.ErrInvalidArgument, chroot, o.namespace)
	}
	o.session.Log = o.log
	rt := newRouter(namespace(o.namespace))
	o.session.OnWatch = rt.onEvent
	sc, err := session.Dial(ctx, servers, o.session)
	if err != nil {
		return nil, fmt.Errorf("framework: dial: %w", err)
	}
	cl := newClient(sc, o)
	cl.router = rt
	cl.countFirstSession()
	return cl, nil
}

// splitChroot takes ZooKeeper's chroot off a connect string split into
// servers: "zk1:2181,zk2:2181/app" names the chroot /app after its last
// server, which the framework serves as its namespace (WithNamespace).
func splitChroot(servers []string) ([]string, string, error) {
	out := make([]string, 0, len(servers))
	chroot := ""
	for i, s := range servers {
		host, root, found := strings.Cut(s, "/")
		if found {
			if i != len(servers)-1 {
				return nil, "", fmt.Errorf("%w: %q: a chroot goes after the last server only, as in \"zk1:2181,zk2:2181/app\"",
					zkrecipes.ErrInvalidArgument, s)
			}
			chroot = "/" + root
			if root == "" {
				chroot = "" // "zk:2181/" is the root
			}
		}
		out = append(out, host)
	}
	return out, chroot, nil
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

func newClient(sc *session.Conn, o options) *Client {
	cl := &Client{
		conn:       sc,
		ns:         namespace(o.namespace),
		acl:        o.acl,
		retry:      o.retry,
		errPolicy:  o.errPolicy,
		log:        o.log,
		drain:      o.drain,
		release:    o.release,
		expiryPct:  o.session.ExpiryPercent,
		meters:     o.meters,
		pathAttr:   o.pathAttr,
		quit:       make(chan struct{}),
		maxRequest: o.maxRequest,
	}
	cl.life, cl.stop = context.WithCancel(context.Background())
	cl.deleter = newDeleter(cl, o.deleteRetry)
	m, err := metrics.New(o.meters, metrics.Observed{
		Connected:      func() bool { return cl.State().IsConnected() },
		PendingDeletes: cl.deleter.count,
	})
	if err != nil {
		cl.log.Warn("zookeeper client: some metrics will not be recorded", "err", err)
	}
	cl.metrics = m
	// Under the connection's lock, in order: the feed's Publish never
	// blocks, and the metrics only count.
	now, unobserve := sc.Observe(func(ev conn.Event) {
		m.StateChange(ev)
		cl.statesMu.Lock()
		cl.lastState, cl.stateSeen = ev, true
		cl.states.Publish(ev)
		cl.statesMu.Unlock()
	})
	cl.unobserve = unobserve
	cl.statesMu.Lock()
	if !cl.stateSeen { // else a change came first, and is newer
		cl.lastState = now
	}
	cl.statesMu.Unlock()
	return cl
}

// The connection itself is not handed out: its Close would end the session
// behind the client's back, before the client's holds learn of it (the
// client's Close ends them first). What a user may ask of it is here.

// State returns the connection's state (see package conn), or StateClosed
// once the client is closed.
func (c *Client) State() conn.State {
	if c.Closed() {
		return conn.StateClosed
	}
	return c.conn.State()
}

// Subscribe returns a subscription to the session's states: first the
// state as it stands (its Time is when it began; NewSession and Simulated
// are those of the change that led to it), then every change, in order
// (see package conn); the last is StateClosed, at Close. A slow reader
// delays only itself and never misses Lost or Reconnected silently: one
// that falls more than DefaultBound states behind is told (its channel
// closes, and Err wraps zkrecipes.ErrFellBehind; docs/vocabulary.md). A
// reader that wants only the changes takes the first value at once: it is
// queued before Subscribe returns.
func (c *Client) Subscribe() *Subscription[conn.Event] {
	c.statesMu.Lock()
	defer c.statesMu.Unlock()
	return c.states.SubscribeWith(c.lastState)
}

// WaitConnected waits until the connection is connected, or ctx ends, and
// returns the session. On a closed client it returns zkrecipes.ErrClosed.
func (c *Client) WaitConnected(ctx context.Context) (conn.Session, error) {
	if ctx == nil {
		return conn.Session{}, opErr("wait connected", "", zkrecipes.ErrNilContext)
	}
	if c.Closed() {
		return conn.Session{}, zkrecipes.ErrClosed
	}
	return c.conn.WaitConnected(ctx)
}

// Namespace returns the namespace ("" or "/app").
func (c *Client) Namespace() string { return string(c.ns) }

// ErrorPolicy returns the client's error policy.
func (c *Client) ErrorPolicy() ErrorPolicy { return c.errPolicy }

// Logger returns the client's logger, for recipes.
func (c *Client) Logger() *slog.Logger { return c.log }

// MeterProvider returns the provider the client's and its recipes'
// instruments are made with (WithMeterProvider).
func (c *Client) MeterProvider() metric.MeterProvider { return c.meters }

// MetricPathAttribute reports whether recipes add their path to their
// instruments' attributes (WithMetricPathAttribute).
func (c *Client) MetricPathAttribute() bool { return c.pathAttr }

// Session returns the current session.
func (c *Client) Session() conn.Session { return c.conn.Session() }

// LossSignal returns the channel of s that closes when, under the client's
// error policy, what was built on s can no longer be trusted: what every
// hold of every recipe obeys.
func (c *Client) LossSignal(s conn.Session) <-chan struct{} { return c.errPolicy.Signal(s) }

// CheckTrust returns nil if what was built on s (a granted node, a term, a
// barrier's entry) may be handed to user code now, and otherwise why not:
// zkrecipes.ErrClosed after Close, zkrecipes.ErrSessionLost or
// zkrecipes.ErrSuspended once LossSignal(s) has fired, and
// zkrecipes.ErrSuspended when the link has gone without proof of life for
// longer than the loss signal allows (two thirds of the session timeout,
// the receive timeout, under the standard policy; under the session-only
// one, that and the simulated expiry's share of the timeout, and no bound
// with WithSimulatedExpiry(0)) although the signal has not fired yet.
//
// That last case is a process that was frozen (SIGSTOP, a VM paused, a
// long stop of the world) and has just been thawed: its goroutines run
// before the connection's reader finds the link dead, and a grant decided
// from what waited in the socket would be handed over on a session the
// server may have expired, with its signal firing a moment later. A
// recipe calls CheckTrust at the last moment before it hands something
// over (engine.Node does, at every hold it hands out and whenever a hold's
// Err is read), so that nothing reaches user code past the signal's
// bound. Proof of life is a reply, that only the leader gives, to one of
// this client's own requests (a write, a sync), dated by when the request
// was sent, or the handshake of a session; an idle link is proven by the
// client's own syncs, a third of the receive timeout apart. It is measured
// on the monotonic clock.
func (c *Client) CheckTrust(s conn.Session) error {
	if c.Closed() {
		return zkrecipes.ErrClosed
	}
	select {
	case <-s.Lost:
		return zkrecipes.ErrSessionLost
	default:
	}
	select {
	case <-c.LossSignal(s):
		return zkrecipes.ErrSuspended
	default:
	}
	// The receive timeout: past it without proof, the link is dead.
	bound := s.Timeout * 2 / 3
	if c.errPolicy == SessionOnlyPolicy {
		// Trusted until Lost, which the client declares once the link
		// has been down for the simulated expiry's share of the timeout;
		// without it, only the server's word ends the session.
		if c.expiryPct == 0 {
			return nil
		}
		bound += s.Timeout * time.Duration(c.expiryPct) / 100
	}
	if age := time.Since(c.conn.ProvenAt()); age >= bound {
		return fmt.Errorf("%w: no proof of life for %v, over the %v the loss signal allows", zkrecipes.ErrSuspended, age.Round(time.Millisecond), bound)
	}
	return nil
}

// ReleaseTimeout returns how long a release waits for its delete to be on
// its way (WithReleaseTimeout): the bound every recipe's Close keeps,
// whatever the link does, leaving the rest to the background.
func (c *Client) ReleaseTimeout() time.Duration { return c.release }

// Closed reports whether Close was called.
func (c *Client) Closed() bool { return c.closed.Load() }

// Done is closed when Close begins: background work of the client's own,
// and of recipes on it, stops then.
func (c *Client) Done() <-chan struct{} { return c.quit }

// Close ends the client: first every OnClose function runs (recipes' holds
// report their loss before anything is deleted); then it waits up to the
// drain timeout for background deletes, abandons the rest (logging each),
// stops every goroutine of the client, and ends the session, whose
// ephemeral nodes go with it. It is idempotent.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	// Holds on this client's nodes end before anything else: the drain
	// deletes nodes, and no other session may be granted a lock while a
	// hold of ours still looks held.
	c.closersMu.Lock()
	closers := c.closers
	c.closers = nil
	c.closersMu.Unlock()
	for _, f := range closers {
		f()
	}
	c.calls.end(nil) // calls in progress under Runtime.Within: ErrClosed
	if c.drain > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.drain)
		_ = c.deleter.drain(ctx)
		cancel()
	}
	c.spawnMu.Lock()
	c.stopped = true
	c.spawnMu.Unlock()
	close(c.quit)
	c.stop()
	c.deleter.abandon()
	c.metrics.Close()
	c.conn.Close() // ends in-flight calls with zk.ErrClosing; observers see StateClosed
	c.router.close()
	c.unobserve()
	c.states.End(nil)
	c.wg.Wait()
	return nil
}

// OnClose registers f to run first thing in Close, before anything is
// deleted or the session ends (at once, on this goroutine, if the client is
// closed already), and returns a function that unregisters it. It is how a
// holder learns of Close before another client can be granted what it
// holds. f must be quick and must not call Close.
func (c *Client) OnClose(f func()) (remove func()) {
	c.closersMu.Lock()
	if c.closed.Load() {
		c.closersMu.Unlock()
		f()
		return func() {}
	}
	if c.closers == nil {
		c.closers = map[uint64]func(){}
	}
	c.closerID++
	id := c.closerID
	c.closers[id] = f
	c.closersMu.Unlock()
	return func() {
		c.closersMu.Lock()
		delete(c.closers, id)
		c.closersMu.Unlock()
	}
}

// Drain waits until every background delete has finished, or ctx ends.
func (c *Client) Drain(ctx context.Context) error {
	if ctx == nil {
		return opErr("drain", "", zkrecipes.ErrNilContext)
	}
	return c.deleter.drain(ctx)
}

// PendingDeletes returns the paths the client is still deleting in the
// background.
func (c *Client) PendingDeletes() []string { return c.deleter.pending() }

// check validates the context, a path and the client's state before
// anything is sent.
func (c *Client) check(ctx context.Context, op, path string, sequential bool) error {
	if ctx == nil {
		return opErr(op, path, zkrecipes.ErrNilContext)
	}
	if c.closed.Load() {
		return opErr(op, path, zkrecipes.ErrClosed)
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

// Server returns the address of the server the session is connected to
// now (or was last), for logs and diagnostics.
func (c *Client) Server() string { return c.conn.ZK().Server() }

// zk is the go-zookeeper client of the session: every request goes through
// it, and only this package may use it (a request sent around the
// framework skips its checks, and its Close would end the session behind
// the holds' backs).
func (c *Client) zk() *zk.Conn { return c.conn.ZK() }

// DefaultParticipantID is Curator's default participant id, the data every
// recipe writes into its nodes unless given WithParticipantID: the address
// this host's name resolves to (Java's
// InetAddress.getLocalHost().getHostAddress(), often 127.0.1.1 or
// 127.0.0.1 on Debian), else the hostname itself.
func DefaultParticipantID() string { return participant.Default() }
