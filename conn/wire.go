package conn

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
)

// handshake is what the server said in its answer to the connect request,
// which go-zookeeper keeps to itself: the negotiated session timeout and
// whether the server is read-only.
type handshake struct {
	timeoutMs int32
	sessionID int64
	readOnly  bool
}

// sniffConn watches the first frame each way of one connection: it reads the
// connect response, and when read-only sessions are allowed it adds the
// readOnly flag that go-zookeeper does not send to the connect request. After
// the handshake it is a plain pass-through.
type sniffConn struct {
	net.Conn
	askReadOnly bool
	onHandshake func(handshake)

	wmu     sync.Mutex
	wrote   bool
	done    atomic.Bool
	readBuf []byte
}

func (c *sniffConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	first := !c.wrote
	c.wrote = true
	c.wmu.Unlock()
	if !first || !c.askReadOnly || len(b) < 4 {
		return c.Conn.Write(b)
	}
	// go-zookeeper writes the whole length-prefixed connect request at once.
	// The protocol lets a client append a readOnly byte; servers without it
	// in the request refuse clients while in read-only mode.
	n := binary.BigEndian.Uint32(b[:4])
	if int(n)+4 != len(b) {
		return c.Conn.Write(b)
	}
	out := make([]byte, len(b)+1)
	copy(out, b)
	binary.BigEndian.PutUint32(out[:4], n+1)
	out[len(b)] = 1
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (c *sniffConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.done.Load() {
		// Read is only called from go-zookeeper's one reading goroutine at a
		// time, so readBuf needs no lock.
		c.readBuf = append(c.readBuf, b[:n]...)
		if h, ok := parseConnectResponse(c.readBuf); ok {
			c.done.Store(true)
			c.readBuf = nil
			c.onHandshake(h)
		}
	}
	return n, err
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
