package session

import (
	"encoding/binary"
	"errors"
	"time"
)

// The connect request and its answer: what the sniffer changes in the one
// and learns from the other.

// handshake is what the server said in its answer to the connect request,
// which go-zookeeper keeps to itself: the negotiated session timeout and
// whether the server is read-only.
type handshake struct {
	timeoutMs int32
	sessionID int64
	readOnly  bool
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

// connectAnswer handles the server's answer to the connect request: it
// asks onHandshake whether go-zookeeper may have the session, and learns
// the timeout and the read-only flag.
func (c *sniffConn) connectAnswer(head []byte) {
	h, ok := parseConnectResponse(head)
	if !ok {
		return
	}
	if c.refused = !c.onHandshake(h); c.refused {
		return
	}
	if h.sessionID == 0 {
		// Expired: go-zookeeper reads the answer (read from the socket
		// already) and dials again, but never closes this link itself.
		_ = c.Conn.Close()
	}
	c.mu.Lock()
	c.session = h.sessionID
	c.mu.Unlock()
	c.readOnly.Store(h.readOnly)
	// A follower asks the leader before it takes a session (a new one, or
	// one that moves to it): the handshake proves the quorum hears us,
	// unless it says the session has expired (no timeout): then it proves
	// nothing of the session.
	if h.timeoutMs > 0 {
		c.prove(c.connectSent)
	}
	// go-zookeeper's own receive timeout, from the same number.
	c.recvTimeout.Store(int64(time.Duration(h.timeoutMs) * time.Millisecond * 2 / 3))
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

// errResumeRefused fails the link on which the server resumed a session
var errResumeRefused = errors.New("zookeeper resumed a session this client had declared lost; link dropped")
