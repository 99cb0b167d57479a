package session

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// handshake is what the server said in its answer to the connect request,
// which go-zookeeper keeps to itself: the negotiated session timeout and
// whether the server is read-only.
type handshake struct {
	timeoutMs int32
	sessionID int64
	readOnly  bool
}

// xidWatchEvent is the xid of a frame the server sends on its own: a watch
// notification. Every other frame answers a request of ours (pings are
// xid -2, auth -4, set-watches -8).
const xidWatchEvent = -1

// ZooKeeper opcodes: those of the requests that can be traced, and the
// others that only the leader answers.
const (
	opCreate          = 1
	opDelete          = 2
	opSetData         = 5
	opSetACL          = 7
	opSync            = 9
	opMulti           = 14
	opCreate2         = 15
	opReconfig        = 16
	opCreateContainer = 19
	opCreateTTL       = 21
)

// throughLeader reports whether a request of op is answered only once the
// leader has taken it (a write, a sync), and so proves that the quorum,
// not only the server the client talks to, hears the session. A read or a
// ping is answered by that server alone, and a follower cut off from the
// quorum goes on answering them until it notices, syncLimit ticks later,
// which may be past the session timeout (ZooKeeper's sample configuration:
// 10s, the library's default timeout): the leader expires the session
// meanwhile and grants its locks to others.
func throughLeader(op int32) bool {
	switch op {
	case opCreate, opDelete, opSetData, opSetACL, opSync, opMulti, opCreate2, opReconfig, opCreateContainer, opCreateTTL:
		return true
	}
	return false
}

func isCreate(op int32) bool {
	return op == opCreate || op == opCreate2 || op == opCreateContainer || op == opCreateTTL
}

// sniffConn watches the frames of one connection, for what go-zookeeper
// does not tell: the connect response (negotiated timeout, read-only flag)
// and, for traced creates, when the request went out and the zxid its reply
// carries (which is the new node's czxid). When read-only sessions are
// allowed it also adds the readOnly flag go-zookeeper does not send.
//
// go-zookeeper writes exactly one whole frame per Write, from one goroutine
// at a time, and reads from one goroutine, so each side needs no lock of its
// own; the map between them does.
type sniffConn struct {
	net.Conn
	askReadOnly bool
	// mayResume says whether go-zookeeper may resume a session on this
	// link; onHandshake whether it may have the session the server gave
	// (see Conn.admit). A session the client declared lost must never
	// come back: what its recipes abandoned (a lock node left for the
	// server's expiry) would stay for as long as it lived.
	mayResume   func(sessionID int64) bool
	onHandshake func(handshake) bool
	tracer      *tracer
	refused     bool // the handshake gave a session go-zookeeper may not have

	wrote bool // the connect request has gone out

	// Liveness. go-zookeeper gives up on a link after 2/3 of the session
	// timeout without any frame, but a watch event is a frame: under a
	// one-way fault that drops our requests, other clients' changes keep
	// the link "alive" while the server expires the session. Only a reply
	// to one of our own requests or pings proves the server hears us, so
	// the read deadline go-zookeeper sets is cut to lastProof+recvTimeout.
	//
	// And a reply proves that the server heard us as of when the request
	// was sent, not when the answer arrived: a server that stalls before
	// answering (or a slow return path) has restarted the session's clock
	// at the request, so the proof is the request's send time.
	//
	// And only a request the leader answers proves that the quorum hears
	// us (see throughLeader): the connection's own syncs (Conn.prover)
	// give one when nothing else does. On a read-only server, where no
	// quorum exists to hear anyone, any reply of ours counts.
	recvTimeout atomic.Int64 // nanoseconds; 0 until the handshake
	// handshakeWithin bounds the wait for the connect response, which
	// go-zookeeper sets at ten receive timeouts (6.7 session timeouts):
	// a server that took the connection and never answers (a restart
	// caught halfway, a lost reply) would keep the client off every link
	// for longer than the session lives. See Conn.dial.
	handshakeWithin time.Duration
	lastProof       atomic.Int64 // mono: send time of the last request answered
	connectSent     int64        // mono: when the connect request went out
	// proven is the session's last proof, over every link (Conn's): a
	// reconnect within the session does not start it from nothing.
	proven   *atomic.Int64
	readOnly atomic.Bool // the server said it is read-only

	mu      sync.Mutex
	pending map[int32]*Trace    // xid of a traced create → its trace
	sent    map[int32]sendTimes // xid → send times of requests not yet answered
	session int64

	// Deadlines as go-zookeeper last set them, and as applied to the
	// socket. It sets one before each frame it reads or writes and clears
	// it after: applied only when the socket is used, a deadline costs one
	// timer update per system call instead of two per frame.
	readDeadline, readApplied   time.Time
	writeDeadline, writeApplied time.Time

	// Bytes read from the socket and not yet handed to go-zookeeper:
	// rbuf[rpos:]. go-zookeeper reads each frame's 4-byte length and then
	// its body, a system call each; a frame read ahead in one call with
	// the next frames behind it is handed out from here (rerr is what the
	// socket said after them).
	rbuf []byte
	rpos int
	rerr error

	// read side: the frame being parsed
	handshaken bool
	head       []byte // the first bytes of the current frame
	remaining  int    // bytes of the current frame not yet seen; 0 between frames
	frameLen   int
}

// headLimit is how much of each reply is kept: the length, the header (xid,
// zxid, err) and a created path.
const headLimit = 4 + 16 + 4 + 1024

func (c *sniffConn) Write(b []byte) (int, error) {
	if !c.writeDeadline.Equal(c.writeApplied) {
		if err := c.Conn.SetWriteDeadline(c.writeDeadline); err != nil {
			return 0, err
		}
		c.writeApplied = c.writeDeadline
	}
	if !c.wrote {
		c.wrote = true
		c.connectSent = mono()
		return c.writeConnect(b)
	}
	c.noteRequest(b)
	c.noteSent(b)
	return c.Conn.Write(b)
}

// noteSent records when a request (or ping, auth, set-watches) with its
// xid goes out, and whether the leader answers it; several may share one
// xid (pings), answered in order.
func (c *sniffConn) noteSent(b []byte) {
	if len(b) < 8 {
		return
	}
	xid := int32(binary.BigEndian.Uint32(b[4:8]))
	s := sent{at: mono()}
	if len(b) >= 12 && xid >= 0 {
		s.quorum = throughLeader(int32(binary.BigEndian.Uint32(b[8:12])))
	}
	c.mu.Lock()
	if c.sent == nil {
		c.sent = map[int32]sendTimes{}
	}
	if q, ok := c.sent[xid]; ok {
		q.more = append(q.more, s)
		c.sent[xid] = q
	} else {
		c.sent[xid] = sendTimes{first: s}
	}
	c.mu.Unlock()
}

// sent is one request on its way: when it was sent, and whether only the
// leader answers it.
type sent struct {
	at     int64
	quorum bool
}

// sendTimes are the unanswered requests of one xid, oldest first. Only
// pings and the like share an xid: a request's own is kept without a
// slice, so noting it allocates nothing.
type sendTimes struct {
	first sent
	more  []sent
}

// answered returns the oldest request with xid not yet answered, and
// forgets it; ok is false for a reply to nothing we sent.
func (c *sniffConn) answered(xid int32) (s sent, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, ok := c.sent[xid]
	if !ok {
		return sent{}, false
	}
	s = q.first
	if len(q.more) == 0 {
		delete(c.sent, xid)
	} else {
		c.sent[xid] = sendTimes{first: q.more[0], more: q.more[1:]}
	}
	return s, true
}

// proofAge is how long ago the last proof of life was sent.
func (c *sniffConn) proofAge() time.Duration {
	return time.Duration(mono() - c.lastProof.Load())
}

// monoBase is the origin of mono.
var monoBase = time.Now()

// mono is the monotonic clock, in nanoseconds since monoBase: proof of life
// is measured on it, so that a step of the wall clock (NTP) neither ends
// every hold nor hides a freeze.
func mono() int64 { return int64(time.Since(monoBase)) }

// monoTime is the time.Time of a mono reading, with its monotonic part.
func monoTime(at int64) time.Time { return monoBase.Add(time.Duration(at)) }

// prove moves lastProof, and the session's proof, forward to at.
func (c *sniffConn) prove(at int64) {
	advance(&c.lastProof, at)
	if c.proven != nil {
		advance(c.proven, at)
	}
}

// advance moves v forward to at.
func advance(v *atomic.Int64, at int64) {
	for {
		old := v.Load()
		if at <= old || v.CompareAndSwap(old, at) {
			return
		}
	}
}

// writeConnect writes go-zookeeper's connect request (length-prefixed:
// protocolVersion int32, lastZxidSeen int64, timeOut int32, sessionId
// int64, passwd buffer), changed in two ways go-zookeeper has no option
// for:
//   - the readOnly byte the protocol allows after it, when read-only
//     sessions are asked for: servers refuse clients without it in
//     read-only mode;
//   - a session that may not be resumed goes with a wrong password: the
//     server answers that it has expired (as it does for any session
//     whose password does not match), and go-zookeeper does what it does
//     on an expiry: it drops the session and its watches, and asks for a
//     new one. The old one is left alone, to expire on the server.
func (c *sniffConn) writeConnect(b []byte) (int, error) {
	if len(b) < 4 || int(binary.BigEndian.Uint32(b))+4 != len(b) {
		return c.Conn.Write(b) // not one whole frame: not ours to change
	}
	var pw []byte // the password's bytes, if the session may not be resumed
	if len(b) >= connectPasswd {
		id := int64(binary.BigEndian.Uint64(b[connectSessionID:]))
		n := int(int32(binary.BigEndian.Uint32(b[connectPasswd-4:])))
		if id != 0 && n > 0 && connectPasswd+n <= len(b) && c.mayResume != nil && !c.mayResume(id) {
			pw = b[connectPasswd : connectPasswd+n]
		}
	}
	out := b
	if pw != nil || c.askReadOnly {
		out = make([]byte, len(b), len(b)+1)
		copy(out, b)
	}
	for i := range pw {
		out[connectPasswd+i] = ^pw[i] // differs from the password in every byte
	}
	if c.askReadOnly {
		binary.BigEndian.PutUint32(out, uint32(len(b)-4+1))
		out = append(out, 1)
	}
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Offsets in a connect request frame: its session id, and its password's
// bytes (after their int32 length).
const (
	connectSessionID = 4 + 4 + 8 + 4
	connectPasswd    = connectSessionID + 8 + 4
)

// noteRequest registers a traced create before its bytes leave, so its
// reply cannot be read before we know to look for it.
func (c *sniffConn) noteRequest(b []byte) {
	if c.tracer == nil || len(b) < 16 || !c.tracer.active() {
		return
	}
	op := int32(binary.BigEndian.Uint32(b[8:12]))
	if !isCreate(op) && op != opDelete {
		return
	}
	plen := int(int32(binary.BigEndian.Uint32(b[12:16])))
	if plen < 0 || 16+plen > len(b) {
		return
	}
	t := c.tracer.match(op, b[16:16+plen])
	if t == nil {
		return
	}
	xid := int32(binary.BigEndian.Uint32(b[4:8]))
	c.mu.Lock()
	if c.pending == nil {
		c.pending = map[int32]*Trace{}
	}
	c.pending[xid] = t
	c.mu.Unlock()
	t.markSent()
}

// SetReadDeadline is go-zookeeper's per-frame read deadline, brought
// forward to the moment the link has gone a receive timeout without a
// reply to us (see lastProof). It takes effect at the next read from the
// socket (go-zookeeper sets it on the goroutine that reads).
func (c *sniffConn) SetReadDeadline(t time.Time) error {
	if rt := c.recvTimeout.Load(); rt > 0 && !t.IsZero() {
		if limit := monoTime(c.lastProof.Load()).Add(time.Duration(rt)); limit.Before(t) {
			t = limit
		}
	} else if !c.handshaken && c.wrote && c.handshakeWithin > 0 && !t.IsZero() {
		if limit := monoTime(c.connectSent).Add(c.handshakeWithin); limit.Before(t) {
			t = limit
		}
	}
	c.readDeadline = t
	return nil
}

// SetWriteDeadline takes effect at the next write (go-zookeeper sets it on
// the goroutine that writes).
func (c *sniffConn) SetWriteDeadline(t time.Time) error {
	c.writeDeadline = t
	return nil
}

// SetDeadline is both.
func (c *sniffConn) SetDeadline(t time.Time) error {
	_ = c.SetWriteDeadline(t)
	return c.SetReadDeadline(t)
}

// readAhead is how much one read from the socket asks for: a few frames of
// replies and events. A longer read (a long listing's body) goes straight
// into the caller's buffer.
const readAhead = 4096

func (c *sniffConn) Read(b []byte) (int, error) {
	if c.rpos < len(c.rbuf) {
		// Read from the socket already, and seen by consume then. The
		// deadline is not checked for these: at most readAhead bytes
		// reach go-zookeeper after it, then the socket's read times out.
		n := copy(b, c.rbuf[c.rpos:])
		c.rpos += n
		return n, nil
	}
	if err := c.rerr; err != nil {
		return 0, c.readFailed(err)
	}
	if !c.readDeadline.Equal(c.readApplied) {
		if err := c.Conn.SetReadDeadline(c.readDeadline); err != nil {
			return 0, err
		}
		c.readApplied = c.readDeadline
	}
	var n int
	var err error
	if len(b) >= readAhead {
		n, err = c.Conn.Read(b)
		if n > 0 {
			c.consume(b[:n])
		}
	} else {
		if c.rbuf == nil {
			c.rbuf = make([]byte, readAhead)
		}
		var got int
		got, err = c.Conn.Read(c.rbuf[:readAhead])
		c.rbuf, c.rpos = c.rbuf[:got], 0
		if got > 0 {
			c.consume(c.rbuf)
			n = copy(b, c.rbuf)
			c.rpos = n
			if err != nil {
				c.rerr, err = err, nil // after the bytes read with it
			}
		}
	}
	if c.refused {
		// Not one byte of the answer reaches go-zookeeper: it takes the
		// link as failed before it could send anything on the session.
		_ = c.Conn.Close()
		c.rbuf, c.rpos, c.rerr = nil, 0, errResumeRefused
		return 0, errResumeRefused
	}
	if err == nil {
		return n, nil // the hot path: errors.As would make ne escape on every read
	}
	return n, c.readFailed(err)
}

// errResumeRefused fails the link on which the server resumed a session
// that the client had declared lost meanwhile.
var errResumeRefused = errors.New("zookeeper resumed a session this client had declared lost; link dropped")

// readFailed is err, from reading the socket.
func (c *sniffConn) readFailed(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// The link is given up: close it now, so that a write blocked on
		// a full socket buffer fails at once instead of holding
		// go-zookeeper's report of the disconnect (and the loss signal)
		// until its own write deadline.
		_ = c.Conn.Close()
	}
	return err
}

// consume feeds read bytes through the frame parser.
func (c *sniffConn) consume(p []byte) {
	for len(p) > 0 {
		if c.remaining == 0 && len(c.head) < 4 {
			// Reading a frame's length.
			k := min(4-len(c.head), len(p))
			c.head = append(c.head, p[:k]...)
			p = p[k:]
			if len(c.head) == 4 {
				c.frameLen = int(binary.BigEndian.Uint32(c.head))
				c.remaining = c.frameLen
				if c.remaining == 0 {
					c.frame()
				}
			}
			continue
		}
		k := min(c.remaining, len(p))
		if keep := min(k, headLimit-len(c.head)); keep > 0 {
			c.head = append(c.head, p[:keep]...)
		}
		c.remaining -= k
		p = p[k:]
		if c.remaining == 0 {
			c.frame()
		}
	}
}

// frame handles one complete frame (of which head holds the start).
func (c *sniffConn) frame() {
	head := c.head
	c.head = c.head[:0]
	if !c.handshaken {
		c.handshaken = true
		if h, ok := parseConnectResponse(head); ok {
			if c.refused = !c.onHandshake(h); c.refused {
				return
			}
			if h.sessionID == 0 {
				// Expired: go-zookeeper reads the answer (read from the
				// socket already) and dials again, but never closes
				// this link itself.
				_ = c.Conn.Close()
			}
			c.mu.Lock()
			c.session = h.sessionID
			c.mu.Unlock()
			c.readOnly.Store(h.readOnly)
			// A follower asks the leader before it takes a session (a new
			// one, or one that moves to it): the handshake proves the
			// quorum hears us, unless it says the session has expired
			// (no timeout): then it proves nothing of the session.
			if h.timeoutMs > 0 {
				c.prove(c.connectSent)
			}
			// go-zookeeper's own receive timeout, from the same number.
			c.recvTimeout.Store(int64(time.Duration(h.timeoutMs) * time.Millisecond * 2 / 3))
		}
		return
	}
	if len(head) < 8 {
		return
	}
	xid := int32(binary.BigEndian.Uint32(head[4:8]))
	if xid != xidWatchEvent {
		// A reply to a request or ping of ours: the server heard us when
		// we sent it, and, for a request the leader answers, the quorum.
		if s, ok := c.answered(xid); ok && (s.quorum || c.readOnly.Load()) {
			c.prove(s.at)
		}
	}
	if len(head) < 20 || xid < 0 {
		return // watch event, ping, auth
	}
	c.mu.Lock()
	t := c.pending[xid]
	delete(c.pending, xid)
	session := c.session
	c.mu.Unlock()
	if t == nil || t.delete {
		return
	}
	zxid := int64(binary.BigEndian.Uint64(head[8:16]))
	code := int32(binary.BigEndian.Uint32(head[16:20]))
	if code != 0 || len(head) < 24 {
		return
	}
	plen := int(int32(binary.BigEndian.Uint32(head[20:24])))
	if plen < 0 || 24+plen > len(head) {
		return
	}
	t.complete(string(head[24:24+plen]), zxid, session)
}

// parseConnectResponse decodes a length-prefixed connect response:
// protocolVersion int32, timeOut int32, sessionId int64, passwd buffer,
// then an optional readOnly bool. ok is false until the frame is complete.
func parseConnectResponse(b []byte) (handshake, bool) {
	if len(b) < 4 {
		return handshake{}, false
	}
	size := int(binary.BigEndian.Uint32(b[:4]))
	if len(b) < 4+size || size < 20 {
		return handshake{}, false
	}
	body := b[4 : 4+size]
	h := handshake{
		timeoutMs: int32(binary.BigEndian.Uint32(body[4:8])),
		sessionID: int64(binary.BigEndian.Uint64(body[8:16])),
	}
	pwLen := int(int32(binary.BigEndian.Uint32(body[16:20])))
	if rest := 20 + max(pwLen, 0); len(body) > rest {
		h.readOnly = body[rest] != 0
	}
	return h, true
}

// tracer holds the creates callers asked to follow, by path prefix, and
// the deletes, by path. Every request written is matched against it, so it
// is indexed: by the directory of a create's prefix (a request's path can
// only match a prefix in its own directory), by the path of a delete.
type tracer struct {
	count   atomic.Int32 // traces held: zero spares the send loop the lock
	mu      sync.Mutex
	creates map[string][]*Trace
	deletes map[string][]*Trace
}

func (tr *tracer) active() bool { return tr.count.Load() > 0 }

// match finds the trace a request for path (its bytes on the wire) answers
// to, without making a string of it.
func (tr *tracer) match(op int32, path []byte) *Trace {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if op == opDelete {
		// A delete trace follows the next delete of its path: matched, it
		// leaves the index, so that a second delete of the path written
		// before the first caller closes its trace finds the next one.
		ts := tr.deletes[string(path)]
		if len(ts) == 0 {
			return nil
		}
		t := ts[0]
		tr.dropLocked(tr.deletes, t.prefix, ts, 0)
		return t
	}
	if !isCreate(op) {
		return nil
	}
	slash := bytes.LastIndexByte(path, '/')
	if slash < 0 {
		return nil
	}
	for _, t := range tr.creates[string(path[:slash])] {
		if len(path) >= len(t.prefix) && string(path[:len(t.prefix)]) == t.prefix {
			return t
		}
	}
	return nil
}

// index is the map t is kept in, and its key there.
func (tr *tracer) index(t *Trace) (map[string][]*Trace, string) {
	if t.delete {
		if tr.deletes == nil {
			tr.deletes = map[string][]*Trace{}
		}
		return tr.deletes, t.prefix
	}
	if tr.creates == nil {
		tr.creates = map[string][]*Trace{}
	}
	// A prefix without a slash matches no request path.
	return tr.creates, t.prefix[:max(strings.LastIndexByte(t.prefix, '/'), 0)]
}

func (tr *tracer) add(t *Trace) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	m, key := tr.index(t)
	m[key] = append(m[key], t)
	tr.count.Add(1)
}

func (tr *tracer) remove(t *Trace) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	m, key := tr.index(t)
	ts := m[key]
	if i := slices.Index(ts, t); i >= 0 { // else matched or closed already
		tr.dropLocked(m, key, ts, i)
	}
}

// dropLocked takes ts[i], kept under key in m, out of the index.
func (tr *tracer) dropLocked(m map[string][]*Trace, key string, ts []*Trace, i int) {
	if len(ts) == 1 {
		delete(m, key)
	} else {
		m[key] = slices.Delete(ts, i, i+1)
	}
	tr.count.Add(-1)
}

// Trace follows one create (or delete) through the wire: see
// TraceCreate and TraceDelete.
type Trace struct {
	prefix string // a path prefix for creates, the exact path for a delete
	delete bool
	tr     *tracer

	sentOnce sync.Once
	sent     chan struct{}
	onSent   func() // runs in markSent, before sent closes

	mu      sync.Mutex
	done    bool
	path    string
	zxid    int64
	session int64
}

// TraceCreate follows the next create request whose path starts with
// prefix and lies in prefix's directory (a full server path: namespace
// included): only package framework uses it, for a protected create whose
// listing rides right behind it. Sent closes once such a request has been
// written to the server: a request sent on the same session after that is
// answered after it; onSent, if not nil, runs just before, on the send loop
// (it must not block). Result reports the zxid of a successful reply. Close
// the trace when done with it.
func (c *Conn) TraceCreate(prefix string, onSent func()) *Trace {
	t := &Trace{prefix: prefix, tr: &c.tracer, sent: make(chan struct{}), onSent: onSent}
	c.tracer.add(t)
	return t
}

// TraceDelete follows the next delete request of exactly path (a full
// server path). Only Sent is meaningful.
func (c *Conn) TraceDelete(path string) *Trace {
	t := &Trace{prefix: path, delete: true, tr: &c.tracer, sent: make(chan struct{})}
	c.tracer.add(t)
	return t
}

// Sent is closed once a matching request has been written.
func (t *Trace) Sent() <-chan struct{} { return t.sent }

// Result returns the created path, the zxid of the create (the node's czxid)
// and the session it was made on, once a successful reply has been read.
func (t *Trace) Result() (path string, zxid, session int64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.path, t.zxid, t.session, t.done
}

// Close stops following.
func (t *Trace) Close() { t.tr.remove(t) }

func (t *Trace) markSent() {
	t.sentOnce.Do(func() {
		if t.onSent != nil {
			t.onSent()
		}
		close(t.sent)
	})
}

func (t *Trace) complete(path string, zxid, session int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.path, t.zxid, t.session, t.done = path, zxid, session, true
}
