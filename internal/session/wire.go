package session

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

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

// that the client had declared lost meanwhile.

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
		c.connectAnswer(head)
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
