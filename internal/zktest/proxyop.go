package zktest

import (
	"encoding/binary"
	"slices"
)

// Op is the type of a ZooKeeper request as numbered on the wire (the
// server's ZooDefs.OpCode): what DropRepliesFrom and DropRequestsFrom aim
// at.
type Op int32

// The request types a recipe's writes and reads use. go-zookeeper sends a
// plain Create as OpCreate, CreateContainer as OpCreateContainer, and every
// Multi as OpMulti.
const (
	OpCreate          Op = 1
	OpDelete          Op = 2
	OpExists          Op = 3
	OpGetData         Op = 4
	OpSetData         Op = 5
	OpGetChildren     Op = 8
	OpSync            Op = 9
	OpGetChildren2    Op = 12
	OpMulti           Op = 14
	OpCreateContainer Op = 19
	OpCreateTTL       Op = 21
	opPing            Op = 11
)

// Requests reports how many requests clients have sent through the proxy
// so far, pings and connect requests aside: a test's proof that a call
// sent nothing.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// RequestsOf reports how many requests of the types ops clients have sent
// through the proxy so far: how a test counts what went on the wire of one
// kind (the listings a queue made, say) without the library counting for
// it.
func (p *Proxy) RequestsOf(ops ...Op) int64 {
	var n int64
	for _, op := range ops {
		if op >= 0 && int(op) < len(p.byOp) {
			n += p.byOp[op].Load()
		}
	}
	return n
}

// count records one request of type op.
func (p *Proxy) count(op Op) {
	if op == opPing {
		return
	}
	p.requests.Add(1)
	if op >= 0 && int(op) < len(p.byOp) {
		p.byOp[op].Add(1)
	}
}

// armedFault is a one-off fault waiting for a request of one of ops.
type armedFault struct {
	ops  []Op
	kind strikeKind
}

type strikeKind int

const (
	dropReplies strikeKind = iota
	dropRequests
	stallRequests
)

// DropRepliesFrom arms a one-off DropReplies that strikes at the next
// request of one of the types ops that any client sends through the proxy:
// that request reaches the server, and its reply and every later one are
// lost. The requests before it, and their replies, go through as usual. It
// is how a test loses the reply to one chosen write of a call that reads
// first. Heal ends the fault, and disarms it if it has not struck.
func (p *Proxy) DropRepliesFrom(ops ...Op) {
	p.armed.Store(&armedFault{ops: ops, kind: dropReplies})
}

// DropRequestsFrom arms a one-off DropRequests that strikes at the next
// request of one of the types ops: that request never reaches the server,
// nor anything sent after it; the requests before it go through. Heal
// ends the fault, and disarms it if it has not struck.
func (p *Proxy) DropRequestsFrom(ops ...Op) {
	p.armed.Store(&armedFault{ops: ops, kind: dropRequests})
}

// StallRequestsFrom arms a one-off stall that strikes at the next request
// of one of the types ops: that request, and everything sent after it on
// its link, is held, in order, until Release (or Heal); the requests
// before it go through, and so do the replies to them. It is how a test
// puts another client's writes between a call's read and its write. Keep
// a stall well under two thirds of the session timeout: a client whose
// pings are held takes its link for dead and drops it, and the held
// requests with it.
func (p *Proxy) StallRequestsFrom(ops ...Op) {
	p.armed.Store(&armedFault{ops: ops, kind: stallRequests})
}

// Stalled reports whether a stall armed by StallRequestsFrom has struck
// and holds requests.
func (p *Proxy) Stalled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stall != nil
}

// Release lets the requests a stall holds go on, in order.
func (p *Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stall != nil {
		close(p.stall)
		p.stall = nil
	}
}

// strike looks through b, the next bytes a client sends on l, for the
// request the proxy is armed for, and applies the fault if the request is
// there. It returns how many bytes of b may go to the server now (all of
// them unless requests are dropped or held from inside b on) and, for a
// stall, the channel to wait on before the rest may go.
func (p *Proxy) strike(l *link, b []byte) (int, <-chan struct{}) {
	armed := p.armed.Load()
	var ops []Op
	if armed != nil {
		ops = armed.ops
	}
	at := l.frames.scan(b, ops, p.count)
	if at < 0 || !p.armed.CompareAndSwap(armed, nil) {
		return len(b), nil
	}
	switch armed.kind {
	case dropRequests:
		p.DropRequests()
		return at, nil
	case stallRequests:
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stall == nil {
			p.stall = make(chan struct{})
		}
		return at, p.stall
	}
	// Before the request is written: its reply cannot come earlier.
	p.DropReplies()
	return len(b), nil
}

// requestFrames follows the framing of what a client sends (a 4-byte
// length before each request; the first one, the connect request, has no
// header after it, every later one starts with its xid and type), so that
// the proxy can tell where each request begins.
type requestFrames struct {
	connected bool     // the connect request has gone by
	hdr       [12]byte // the length, xid and type of the request being read
	nhdr      int
	skip      int // bytes of the current request's body still to come
}

// scan takes the next bytes of the stream and returns the offset in b at
// which the first request of one of the types ops begins, or -1 (a
// request whose header began in earlier bytes is reported at 0: those have
// gone). It calls seen with the type of each request whose header it
// completes.
func (f *requestFrames) scan(b []byte, ops []Op, seen func(Op)) (found int) {
	found = -1
	start := 0
	for i := 0; i < len(b); {
		if f.skip > 0 {
			n := min(f.skip, len(b)-i)
			f.skip -= n
			i += n
			continue
		}
		if f.nhdr == 0 {
			start = i
		}
		need := len(f.hdr)
		if !f.connected {
			need = 4
		}
		n := copy(f.hdr[f.nhdr:need], b[i:])
		f.nhdr += n
		i += n
		if f.nhdr < need {
			break
		}
		f.nhdr = 0
		length := int(int32(binary.BigEndian.Uint32(f.hdr[:4])))
		if !f.connected {
			f.connected = true
			f.skip = max(length, 0)
			continue
		}
		f.skip = max(length-8, 0)
		typ := Op(int32(binary.BigEndian.Uint32(f.hdr[8:12])))
		seen(typ)
		if found < 0 && slices.Contains(ops, typ) {
			found = start
		}
	}
	return found
}
