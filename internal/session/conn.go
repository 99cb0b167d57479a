package session

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
)

// Conn is one ZooKeeper session and its state machine. It is safe for
// concurrent use. Its zero value is not usable: call Dial.
type Conn struct {
	cfg      Config
	log      *slog.Logger
	zk       *zk.Conn
	zkEvents <-chan zk.Event

	lastHandshake atomic.Pointer[handshake] // written by the dialer's sniffer
	lastDialErr   atomic.Pointer[error]     // the last failed connection attempt
	tracer        tracer

	inboxMu     sync.Mutex
	inbox       []rawEvent
	queued      uint64        // events numbered so far (rawEvent.seq)
	inboxSignal chan struct{} // capacity 1: "inbox is not empty"

	mu        sync.Mutex
	state     conn.State
	last      conn.Event // the change to state
	epoch     *epoch
	changed   chan struct{}                  // closed and replaced on every transition
	observers map[*func(conn.Event)]struct{} // Observe
	connected chan struct{}                  // closed at the first session

	// dead is the last session declared lost: go-zookeeper may not resume
	// it (see sniffConn.mayResume). resumed says a handshake resumed the
	// current session and its event is not applied yet: it is the first
	// event numbered after resumeAfter (events queued before it, such as
	// the disconnect of an earlier failed attempt, say nothing of it).
	// expiryDue says the simulated expiry fired meanwhile: it gives way
	// to the resume, or takes effect if the resume's link fails instead.
	dead               int64
	resumed, expiryDue bool
	resumeAfter        uint64

	closeOnce sync.Once
	quit      chan struct{}
	wg        sync.WaitGroup

	// closing ends a dial in progress, and link is the connection
	// go-zookeeper uses now: Close closes it, so that a handshake stuck on
	// a server that does not answer (go-zookeeper waits up to ten receive
	// timeouts for it) cannot hold Close up.
	closing context.Context
	// handshakeWithin is how long a server may take to answer the connect
	// request: the ZooKeeper Java client's connect timeout (the session
	// timeout over the number of servers), and never more than the
	// receive timeout any other answer gets (2/3 of it).
	handshakeWithin time.Duration
	stopDialer      context.CancelFunc
	link            atomic.Pointer[sniffConn]
	proven          atomic.Int64 // mono: the session's last proof, over every link
}

// rawEvent is a go-zookeeper session event with the handshake that came with
// it.
type rawEvent struct {
	state zk.State
	hs    *handshake
	at    time.Time
	seq   uint64 // in the order go-zookeeper reported them, from 1
}

// epoch is one stretch of trust in one session: it begins with Connected or
// a Reconnected after Lost, and ends with Lost.
type epoch struct {
	id        int64
	timeout   time.Duration
	suspended chan struct{} // replaced at each Reconnected within the epoch
	lost      chan struct{}
	isLost    bool
}

// ErrNoSession is wrapped by the error of a Dial that got no session: ctx
// ended or DialTimeout passed first, or no server's name resolved. The
// error says why with the last failure to connect, if there was one.
var ErrNoSession = errors.New("no session")

// Dial starts a session with the ensemble at servers ("host:port", the port
// defaulting to 2181) and returns once the first session is established and
// its credentials are accepted, or when ctx ends or cfg.DialTimeout passes.
func Dial(ctx context.Context, servers []string, cfg Config) (*Conn, error) {
	if err := cfg.validate(servers); err != nil {
		return nil, err
	}
	c := &Conn{
		cfg:         cfg,
		log:         cfg.Log,
		inboxSignal: make(chan struct{}, 1),
		changed:     make(chan struct{}),
		connected:   make(chan struct{}),
		quit:        make(chan struct{}),
		epoch:       closedEpoch(),
	}
	c.closing, c.stopDialer = context.WithCancel(context.Background())
	c.handshakeWithin = min(cfg.SessionTimeout*2/3, cfg.SessionTimeout/time.Duration(len(servers)))
	var hosts zk.HostProvider = zk.NewDNSHostProvider()
	if cfg.TLS != nil {
		hosts = &namedHosts{} // the certificate is checked against the name given
	}
	zc, events, err := zk.Connect(servers, cfg.SessionTimeout,
		zk.WithEventCallback(c.onEvent),
		zk.WithDialer(c.dial),
		zk.WithHostProvider(hosts),
		zk.WithLogger(zkLogger{c.log}),
		zk.WithLogInfo(false))
	if err != nil {
		// Only the host provider fails here: no server's name resolved.
		return nil, fmt.Errorf("%w with %v: %w", ErrNoSession, servers, err)
	}
	c.zk, c.zkEvents = zc, events
	c.wg.Add(2)
	go c.run()
	go c.prover()

	start := time.Now()
	timer := time.NewTimer(cfg.DialTimeout)
	defer timer.Stop()
	select {
	case <-c.connected:
	case <-ctx.Done():
		c.Close()
		return nil, c.noSession(servers, start, ctx.Err())
	case <-timer.C:
		c.Close()
		return nil, c.noSession(servers, start, context.DeadlineExceeded)
	}
	for _, a := range cfg.Auth {
		if err := c.addAuth(ctx, a); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// noSession is Dial's error when it gave up after why: it says how long it
// tried and the last failure to connect, if any (a refused connection, a
// failed TLS handshake, a name that does not resolve).
func (c *Conn) noSession(servers []string, start time.Time, why error) error {
	err := fmt.Errorf("%w with %v after %v: %w", ErrNoSession, servers, time.Since(start).Round(time.Millisecond), why)
	if last := c.lastDialErr.Load(); last != nil {
		err = fmt.Errorf("%w; last connection attempt: %w", err, *last)
	}
	return err
}

func (cfg *Config) validate(servers []string) error {
	if len(servers) == 0 {
		return fmt.Errorf("%w: no servers", zkrecipes.ErrInvalidArgument)
	}
	for _, s := range servers {
		if s == "" {
			return fmt.Errorf("%w: empty server address", zkrecipes.ErrInvalidArgument)
		}
	}
	switch {
	case cfg.SessionTimeout <= 0:
		return fmt.Errorf("%w: session timeout %v", zkrecipes.ErrInvalidArgument, cfg.SessionTimeout)
	case cfg.SessionTimeout/time.Millisecond > math.MaxInt32:
		// The protocol carries it as int32 milliseconds: beyond, it wraps
		// negative and no server will ever give a session.
		return fmt.Errorf("%w: session timeout %v above the protocol's %v", zkrecipes.ErrInvalidArgument, cfg.SessionTimeout, conn.MaxSessionTimeout)
	case cfg.ConnectTimeout <= 0:
		return fmt.Errorf("%w: connect timeout %v", zkrecipes.ErrInvalidArgument, cfg.ConnectTimeout)
	case cfg.DialTimeout <= 0:
		return fmt.Errorf("%w: dial timeout %v", zkrecipes.ErrInvalidArgument, cfg.DialTimeout)
	case cfg.ExpiryPercent < 0 || cfg.ExpiryPercent > 100:
		return fmt.Errorf("%w: simulated expiry %d%% not in 0..100", zkrecipes.ErrInvalidArgument, cfg.ExpiryPercent)
	case cfg.Log == nil:
		return fmt.Errorf("%w: nil logger", zkrecipes.ErrInvalidArgument)
	}
	return nil
}

// addAuth sends credentials, retrying through connection loss: go-zookeeper
// only remembers (and replays on reconnect) credentials the server accepted.
func (c *Conn) addAuth(ctx context.Context, a Auth) error {
	for {
		err := c.zk.AddAuth(a.Scheme, a.Cred)
		if err == nil {
			return nil
		}
		if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) {
			return fmt.Errorf("conn: add %s auth: %w", a.Scheme, err)
		}
		if _, werr := c.WaitConnected(ctx); werr != nil {
			return fmt.Errorf("conn: add %s auth: %w", a.Scheme, errors.Join(err, werr))
		}
	}
}

// dial opens one connection for go-zookeeper, with TLS if configured, and
// puts the handshake sniffer on it.
func (c *Conn) dial(network, addr string, _ time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(c.closing, c.cfg.ConnectTimeout)
	defer cancel()
	var nc net.Conn
	var err error
	if c.cfg.TLS != nil {
		tc := c.cfg.TLS.Clone()
		if tc.ServerName == "" {
			if host, _, herr := net.SplitHostPort(addr); herr == nil {
				tc.ServerName = host
			}
		}
		nc, err = (&tls.Dialer{Config: tc}).DialContext(ctx, network, addr)
		var op *net.OpError
		if err != nil && ctx.Err() != nil && !errors.As(err, &op) {
			// The handshake ran out of time, and its error is the bare
			// context's, which names neither the server nor the step.
			err = fmt.Errorf("TLS handshake with %s: no answer within the connect timeout (%v): %w", addr, c.cfg.ConnectTimeout, err)
		}
	} else {
		nc, err = (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	if err != nil {
		// An attempt that Close cut short says nothing about the servers,
		// and would hide the failure Dial's error is to name.
		if c.closing.Err() == nil {
			c.lastDialErr.Store(&err)
		}
		return nil, err
	}
	sc := &sniffConn{
		proven:          &c.proven,
		Conn:            nc,
		askReadOnly:     c.cfg.ReadOnly,
		mayResume:       c.mayResume,
		onHandshake:     c.admit,
		tracer:          &c.tracer,
		handshakeWithin: c.handshakeWithin,
	}
	c.link.Store(sc)
	if c.closing.Err() != nil {
		nc.Close() // Close ran while we dialled
	}
	return sc, nil
}

// onEvent is go-zookeeper's callback. It runs on the client's own goroutine,
// so it only queues the event.
func (c *Conn) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		if c.cfg.OnWatch != nil {
			c.cfg.OnWatch(ev)
		}
		return
	}
	re := rawEvent{state: ev.State, at: time.Now()}
	if ev.State == zk.StateHasSession {
		// The handshake was read on this same goroutine just before this
		// callback, so the pointer is the one for this session.
		re.hs = c.lastHandshake.Load()
	}
	c.inboxMu.Lock()
	c.queued++
	re.seq = c.queued
	c.inbox = append(c.inbox, re)
	c.inboxMu.Unlock()
	select {
	case c.inboxSignal <- struct{}{}:
	default:
	}
}

// prover sends a sync whenever nothing has proved for a third of the
// receive timeout that the quorum hears the session (see sniffConn): a
// client connected to a follower that a partition cuts off from the
// quorum then learns it (its link is judged dead at the receive timeout,
// two thirds of the session timeout, and it looks for another server)
// before the leader can expire its session, however long the follower
// takes to notice. A sync is answered by the leader through the follower,
// and costs one small request per third of a receive timeout of idleness.
func (c *Conn) prover() {
	defer c.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := 100 * time.Millisecond // until the first handshake
		if l := c.link.Load(); l != nil {
			if rt := time.Duration(l.recvTimeout.Load()); rt > 0 {
				wait = rt/3 - l.proofAge()
				if wait <= 0 && c.State().IsConnected() {
					// Its reply proves (the sniffer sees it); an error
					// means the link or the session is in trouble, which
					// the state machine reports. Once a third has passed,
					// look again. Never while the link is down: a request
					// queued then is sent the moment go-zookeeper
					// reconnects, and its reply races go-zookeeper's own
					// re-registration of the watches (its lastZxid).
					_, _ = c.zk.Sync("/")
					wait = rt / 3
				}
				if wait <= 0 {
					wait = 100 * time.Millisecond // not connected: look again soon
				}
			}
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-c.quit:
			return
		}
	}
}

// State returns the current state (conn.StateClosed after Close).
func (c *Conn) State() conn.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Session returns the current session and the channels that close when it
// can no longer be trusted.
func (c *Conn) Session() conn.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionOfLocked()
}

// sessionOfLocked is the current epoch as a Session. Its fields are read
// under c.mu: a reconnect within the session replaces its Suspended.
func (c *Conn) sessionOfLocked() conn.Session {
	e := c.epoch
	return conn.Session{ID: e.id, Timeout: e.timeout, Suspended: e.suspended, Lost: e.lost}
}

// ProvenAt returns when the server last proved that it hears this client:
// the send time of the last of our requests it answered that only the
// leader answers (the quorum heard it; see sniffConn), or of the last
// handshake that gave a session, over any link. It is the zero time before
// the first handshake. It is read on the monotonic clock: a step of the
// wall clock moves neither it nor time.Since of it. A session whose proof
// is older than the receive timeout has a dead link, even before
// go-zookeeper's reader has noticed (a process frozen and thawed runs its
// other goroutines first).
func (c *Conn) ProvenAt() time.Time {
	at := c.proven.Load()
	if at == 0 {
		return time.Time{}
	}
	return monoTime(at)
}

// WaitConnected waits until the connection is in a connected state (Connected,
// Reconnected or ReadOnly) and returns its session. It returns zkrecipes.ErrClosed after
// Close and ctx's error when ctx ends first.
func (c *Conn) WaitConnected(ctx context.Context) (conn.Session, error) {
	for {
		c.mu.Lock()
		st, changed, session := c.state, c.changed, c.sessionOfLocked()
		c.mu.Unlock()
		if st == conn.StateClosed {
			return conn.Session{}, zkrecipes.ErrClosed
		}
		if st.IsConnected() {
			return session, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return conn.Session{}, ctx.Err()
		}
	}
}

// ZK is the go-zookeeper connection of the session: only package
// framework sends requests through it.
func (c *Conn) ZK() *zk.Conn { return c.zk }

// Observe calls f with every state change from now on, synchronously,
// in order, under the connection's lock: f must be quick and must not call
// the connection. It returns the change that led to the state as it
// stands when f starts observing, and remove, which stops f.
func (c *Conn) Observe(f func(conn.Event)) (now conn.Event, remove func()) {
	p := &f
	c.mu.Lock()
	if c.observers == nil {
		c.observers = map[*func(conn.Event)]struct{}{}
	}
	c.observers[p] = struct{}{}
	now = c.last
	c.mu.Unlock()
	return now, func() {
		c.mu.Lock()
		delete(c.observers, p)
		c.mu.Unlock()
	}
}

// Close ends the session (its ephemeral nodes go with it, if the server can be
// reached) and every goroutine of the Conn. Session channels are closed, and
// observers see a last event, StateClosed. Close is idempotent and returns when all is stopped.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.state = conn.StateClosed
		close(c.changed)
		c.changed = make(chan struct{})
		if e := c.epoch; !e.isLost {
			e.end()
		}
		closing := conn.Event{State: conn.StateClosed, SessionID: c.epoch.id, Time: time.Now()}
		for f := range c.observers {
			(*f)(closing)
		}
		c.mu.Unlock()

		c.stopDialer()
		c.zk.Close()
		if l := c.link.Load(); l != nil {
			l.Conn.Close()
		}
		// go-zookeeper's Close returns before its goroutines end; its event
		// channel is closed when they have.
		for range c.zkEvents {
		}
		close(c.quit)
		c.wg.Wait()
	})
	return nil
}

// zkLogger routes go-zookeeper's log lines to slog at debug level: they are
// about reconnects the state machine reports anyway.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "source", "go-zookeeper")
}
