package zktest

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP proxy in front of every server of a cluster: one listener per
// server. Clients that connect through it can be cut off, blackholed (both
// ways, or one way: DropReplies, DropRequests, or one way from a chosen
// request on: DropRepliesFrom, DropRequestsFrom), held up from a chosen
// request on (StallRequestsFrom) or slowed down together.
// Its methods are safe for concurrent use.
type Proxy struct {
	cluster  *Cluster
	fwds     []*forwarder
	mode     atomic.Int32               // a proxyMode
	delay    atomic.Int64               // nanoseconds added before each forwarded chunk
	delayUp  atomic.Int64               // nanoseconds added before each chunk the server sends
	lagUp    atomic.Int64               // nanoseconds every byte the server sends is held
	lagDown  atomic.Int64               // nanoseconds every byte the client sends is held
	refused  atomic.Uint64              // bit i: links to forwarder i are refused (Refuse)
	armed    atomic.Pointer[armedFault] // a one-off fault waiting for a request (proxyop.go)
	requests atomic.Int64               // requests sent through, pings aside (proxyop.go)
	byOp     [128]atomic.Int64          // the same by type, for the types below 128 (proxyop.go)
	stall    chan struct{}              // under mu: closed by Release (proxyop.go)

	mu sync.Mutex
	// greet rewrites the greeting that opens each link, the first bytes
	// the client sends: it returns false until it has all of it. nil:
	// none. Each link takes it when it opens.
	greet  func([]byte) ([]byte, bool)
	links  map[*link]struct{}
	closed bool
	wg     sync.WaitGroup
}

type proxyMode int32

const (
	modeForward     proxyMode = iota
	modeBlackhole             // both directions dropped
	modeDropReply             // client→server forwarded, server→client dropped
	modeDropRequest           // client→server dropped, server→client forwarded
)

type forwarder struct {
	ln     net.Listener
	target func() string // resolved per connection: a container may move ports
	server int           // the ID of the server it leads to; 0 if not one server
}

// link is one client connection and its connection to the server.
type link struct {
	client, server net.Conn
	fwd            int // the index of the forwarder that accepted it
	// lostUp/lostDown: bytes towards the server/client were dropped. That
	// direction's stream now has a hole: nothing more may pass on it (the
	// peer would parse garbage), and Heal closes the link.
	lostUp, lostDown atomic.Bool
	frames           requestFrames // what the client sends, request by request

	closeOnce sync.Once
	dead      chan struct{} // closed by close
}

func (l *link) tainted() bool { return l.lostUp.Load() || l.lostDown.Load() }

func (l *link) close() {
	l.client.Close()
	l.server.Close()
	l.closeOnce.Do(func() { close(l.dead) })
}

// NewProxy starts a new proxy in front of the cluster's servers, closed when
// the test ends. Give one client its own proxy to fault that client alone.
func (c *Cluster) NewProxy() *Proxy {
	c.t.Helper()
	p := c.newProxy(c.targets())
	for i, f := range p.fwds {
		f.server = i + 1
		if i < len(c.servers) {
			f.server = c.servers[i].ID
		}
	}
	return p
}

// newProxy starts a proxy with one listener per target.
func (c *Cluster) newProxy(targets []func() string) *Proxy {
	c.t.Helper()
	p := &Proxy{cluster: c, links: map[*link]struct{}{}}
	if len(targets) > 64 {
		c.t.Fatalf("zktest: a proxy for %d servers: at most 64", len(targets))
	}
	for _, target := range targets {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.Close()
			c.t.Fatalf("zktest: proxy listen: %v", err)
		}
		f := &forwarder{ln: ln, target: target}
		p.fwds = append(p.fwds, f)
		p.wg.Add(1)
		go p.accept(f, len(p.fwds)-1)
	}
	c.t.Cleanup(p.Close)
	return p
}

// Addrs returns the proxy's listening addresses, one per server, in server
// order.
func (p *Proxy) Addrs() []string {
	out := make([]string, len(p.fwds))
	for i, f := range p.fwds {
		out[i] = f.ln.Addr().String()
	}
	return out
}

// ConnectString is Addrs joined with commas.
func (p *Proxy) ConnectString() string { return strings.Join(p.Addrs(), ",") }

// Cut closes every client link now, like a network reset. New connections
// are still accepted.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		l.close()
	}
}

// Blackhole keeps links open but drops every byte in both directions, new
// links included, as a partition does. Held longer than the session timeout,
// it makes the server expire the session.
func (p *Proxy) Blackhole() { p.mode.Store(int32(modeBlackhole)) }

// DropReplies forwards requests to the server but drops everything the server
// sends back: the server applies a write and the client never learns it did.
// Pings still reach the server, so the session stays alive.
//
// Every link open now is marked as losing replies at once, not on its next
// read: a reply the server has already sent may still sit unread in the
// proxy's socket, and a test that heals as soon as it sees the write applied
// would otherwise let that reply through. Heal then closes those links.
func (p *Proxy) DropReplies() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode.Store(int32(modeDropReply))
	for l := range p.links {
		l.lostDown.Store(true)
	}
}

// DropRequests drops everything clients send while forwarding what the
// servers send: the one-way fault in which a client still receives watch
// events (other clients' changes) while none of its requests or pings
// arrive. Held longer than the session timeout, the server expires the
// session; the client must not take the events for proof of life.
//
// Every link open now is marked as having lost requests, and Heal closes
// those links.
func (p *Proxy) DropRequests() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode.Store(int32(modeDropRequest))
	for l := range p.links {
		l.lostUp.Store(true)
	}
}

// Refuse cuts the proxy's links to the servers with the given IDs and
// refuses new ones (accepted, then closed at once) until Heal: a client
// behind it reaches only the other servers. Partition the ensemble with
// the servers it can still reach on the minority side, and the client is
// there with them.
func (p *Proxy) Refuse(ids ...int) {
	var mask uint64
	for i, f := range p.fwds {
		for _, id := range ids {
			if f.server == id && id != 0 {
				mask |= 1 << i
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused.Store(p.refused.Load() | mask)
	for l := range p.links {
		if mask&(1<<l.fwd) != 0 {
			l.close()
		}
	}
}

// Servers returns the IDs of the servers the proxy has open links to, in
// server order: where the clients behind it are connected now.
func (p *Proxy) Servers() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var on uint64
	for l := range p.links {
		on |= 1 << l.fwd
	}
	var out []int
	for i, f := range p.fwds {
		if on&(1<<i) != 0 && f.server != 0 {
			out = append(out, f.server)
		}
	}
	return out
}

// Delay adds d before every chunk forwarded in either direction.
func (p *Proxy) Delay(d time.Duration) { p.delay.Store(int64(d)) }

// DelayReplies adds d before every chunk the server sends, as a server that
// stalls before it answers (a slow fsync) or a slow return path does: the
// server has heard the request long before the client sees the answer.
func (p *Proxy) DelayReplies(d time.Duration) { p.delayUp.Store(int64(d)) }

// LagReplies holds every byte the server sends for d, in order, as a slow
// path does: unlike DelayReplies, which sleeps before each chunk (so that
// under steady traffic the bytes of a whole stretch arrive together, up to
// twice d late), each byte is held d from when the proxy read it, and bytes
// read apart arrive as far apart. Heal ends it; bytes already held still
// arrive at their time, ahead of later ones.
func (p *Proxy) LagReplies(d time.Duration) { p.lagUp.Store(int64(d)) }

// Lag holds every byte for d in both directions, in order, as a network
// with a one-way delay of d does: a request and its reply take 2d more
// than over loopback, and requests sent together still arrive together
// (pipelining keeps its worth, unlike with Delay). Benchmarks use it to
// measure clients as they run against a server on another machine. As on
// a network, bytes already on their way when a fault begins (DropRequests,
// Blackhole) still arrive, up to d later.
func (p *Proxy) Lag(d time.Duration) {
	p.lagDown.Store(int64(d))
	p.lagUp.Store(int64(d))
}

// Heal ends every fault: forwarding resumes at full speed, and the links that
// lost bytes are closed (a stream with a hole in it cannot be resumed; the
// client reconnects).
func (p *Proxy) Heal() {
	p.armed.Store(nil)
	p.Release()
	p.delay.Store(0)
	p.delayUp.Store(0)
	p.lagUp.Store(0)
	p.lagDown.Store(0)
	p.refused.Store(0)
	p.mode.Store(int32(modeForward))
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		if l.tainted() {
			l.close()
		}
	}
}

// Links reports how many client links are open.
func (p *Proxy) Links() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops the listeners, closes every link and waits for all of the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		for _, f := range p.fwds {
			f.ln.Close()
		}
		for l := range p.links {
			l.close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept(f *forwarder, fwd int) {
	defer p.wg.Done()
	for {
		cc, err := f.ln.Accept()
		if err != nil {
			return // listener closed
		}
		if p.refused.Load()&(1<<fwd) != 0 {
			cc.Close()
			continue
		}
		sc, err := net.DialTimeout("tcp", f.target(), 2*time.Second)
		if err != nil {
			cc.Close() // server down: the client sees a refused session
			continue
		}
		l := &link{client: cc, server: sc, fwd: fwd, dead: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.close()
			return
		}
		if p.refused.Load()&(1<<fwd) != 0 { // Refuse came while we dialled
			p.mu.Unlock()
			l.close()
			continue
		}
		// Under mu, so that DropReplies and this link agree on the mode.
		switch proxyMode(p.mode.Load()) {
		case modeDropReply:
			l.lostDown.Store(true)
		case modeDropRequest:
			l.lostUp.Store(true)
		}
		p.links[l] = struct{}{}
		greet := p.greet
		p.wg.Add(2)
		p.mu.Unlock()
		var done sync.WaitGroup
		done.Add(2)
		go func() { defer p.wg.Done(); defer done.Done(); p.pump(l, cc, sc, false, greet) }()
		go func() { defer p.wg.Done(); defer done.Done(); p.pump(l, sc, cc, true, nil) }()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			done.Wait()
			p.mu.Lock()
			delete(p.links, l)
			p.mu.Unlock()
		}()
	}
}

// pump copies src to dst, applying the proxy's current fault. Either side
// failing closes the whole link.
// greet, if not nil, rewrites the greeting that opens the link (see
// Proxy.greet).
func (p *Proxy) pump(l *link, src, dst net.Conn, fromServer bool, greet func([]byte) ([]byte, bool)) {
	defer l.close()
	d := &pipe{p: p, l: l, dst: dst, fromServer: fromServer, lost: &l.lostUp, greet: greet}
	if fromServer {
		d.lost = &l.lostDown
	}
	defer d.end()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !d.send(buf[:n], err) {
				return
			}
			continue
		}
		if err != nil {
			return // EOF, reset, or closed by Cut/Heal/Close
		}
	}
}

// pipe is one direction of a link, as pump runs it.
type pipe struct {
	p          *Proxy
	l          *link
	dst        net.Conn
	fromServer bool
	lost       *atomic.Bool                // l's lostUp or lostDown
	held       chan heldChunk              // once lagging, every chunk goes through it, in order
	greet      func([]byte) ([]byte, bool) // nil once the greeting is through
	greeting   []byte                      // the greeting so far, until it is whole
}

// send forwards chunk, read with err, as the proxy's faults say, and
// reports whether to read on.
func (d *pipe) send(chunk []byte, err error) bool {
	if !d.fromServer && !d.lost.Load() {
		send, hold := d.p.strike(d.l, chunk)
		switch {
		case hold != nil:
			// Requests are held from inside this chunk on: what came
			// before the aimed-at request goes now.
			if !d.forward(chunk[:send]) {
				return false
			}
			select {
			case <-hold:
			case <-d.l.dead:
				return false
			}
			chunk = chunk[send:]
		case send < len(chunk):
			// Requests are dropped from inside this chunk on: what came
			// before the aimed-at request still goes.
			return d.forward(chunk[:send]) && err == nil
		}
	}
	if d.dropping() {
		// Heal may have run between the mode's load and the store in
		// dropping and kept this link: it must not stay open, silently
		// dropping, once the fault is over. (Read on whatever err was: the
		// next read says it again.)
		return proxyMode(d.p.mode.Load()) != modeForward
	}
	if d.greet != nil {
		d.greeting = append(d.greeting, chunk...)
		out, whole := d.greet(d.greeting)
		if !whole {
			return err == nil
		}
		d.greet, chunk, d.greeting = nil, out, nil
	}
	d.delay()
	return d.forward(chunk) && err == nil
}

// dropping reports whether this direction drops what it reads: from the
// first byte a fault drops on, for good.
func (d *pipe) dropping() bool {
	mode := proxyMode(d.p.mode.Load())
	if mode == modeBlackhole || (mode == modeDropReply && d.fromServer) || (mode == modeDropRequest && !d.fromServer) {
		d.lost.Store(true)
	}
	return d.lost.Load()
}

// delay sleeps the delay the proxy adds before each chunk it forwards.
func (d *pipe) delay() {
	delay := time.Duration(d.p.delay.Load())
	if d.fromServer {
		delay += time.Duration(d.p.delayUp.Load())
	}
	if delay > 0 {
		time.Sleep(delay)
	}
}

// lag is this direction's lag now.
func (d *pipe) lag() time.Duration {
	if d.fromServer {
		return time.Duration(d.p.lagUp.Load())
	}
	return time.Duration(d.p.lagDown.Load())
}

// forward writes b to dst now or, once a lag has been on, hands it to the
// releaser to write lag from now: every byte goes through the one path in
// order, so none overtakes bytes held before it.
func (d *pipe) forward(b []byte) bool {
	lag := d.lag()
	if lag > 0 && d.held == nil {
		held := make(chan heldChunk, 256)
		d.held = held
		d.p.wg.Add(1)
		go func() { defer d.p.wg.Done(); releaseHeld(d.l, held, d.dst) }()
	}
	if d.held == nil {
		_, werr := d.dst.Write(b)
		return werr == nil
	}
	select {
	case d.held <- heldChunk{b: append([]byte(nil), b...), at: time.Now().Add(lag)}:
		return true
	case <-d.l.dead:
		return false
	}
}

// end lets the releaser, if any, write what it holds and end.
func (d *pipe) end() {
	if d.held != nil {
		close(d.held)
	}
}

// heldChunk is bytes a lagging link holds until at.
type heldChunk struct {
	b  []byte
	at time.Time
}

// releaseHeld writes each held chunk to dst at its time, until held is closed
// or the link dies.
func releaseHeld(l *link, held <-chan heldChunk, dst net.Conn) {
	for c := range held {
		if wait := time.Until(c.at); wait > 0 && wait < preciseBelow {
			// The runtime's timers wake at millisecond steps (its poller
			// waits in whole milliseconds): a 0.5 ms lag became 1.1 ms. A
			// sleeping thread wakes on time; the link's death is seen
			// right after.
			preciseSleep(wait)
		} else if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.dead:
				t.Stop()
				return
			}
		}
		if _, err := dst.Write(c.b); err != nil {
			l.close()
			return
		}
	}
}
