package session

import (
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func connectResponse(timeoutMs int32, sid int64, pw []byte, readOnly *bool) []byte {
	body := binary.BigEndian.AppendUint32(nil, 0)
	body = binary.BigEndian.AppendUint32(body, uint32(timeoutMs))
	body = binary.BigEndian.AppendUint64(body, uint64(sid))
	body = binary.BigEndian.AppendUint32(body, uint32(len(pw)))
	body = append(body, pw...)
	if readOnly != nil {
		b := byte(0)
		if *readOnly {
			b = 1
		}
		body = append(body, b)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestParseConnectResponse(t *testing.T) {
	yes, no := true, false
	for name, tc := range map[string]struct {
		frame []byte
		want  handshake
	}{
		"old server, no flag": {connectResponse(4000, 0x1234, make([]byte, 16), nil), handshake{4000, 0x1234, false}},
		"read-write":          {connectResponse(6000, 7, make([]byte, 16), &no), handshake{6000, 7, false}},
		"read-only":           {connectResponse(6000, 7, make([]byte, 16), &yes), handshake{6000, 7, true}},
	} {
		t.Run(name, func(t *testing.T) {
			for cut := 0; cut < len(tc.frame); cut++ {
				_, ok := parseConnectResponse(tc.frame[:cut])
				require.False(t, ok, "incomplete frame of %d bytes parsed", cut)
			}
			h, ok := parseConnectResponse(tc.frame)
			require.True(t, ok)
			assert.Equal(t, tc.want, h)
		})
	}
}

func TestSniffConnAddsReadOnlyFlagToConnectRequestOnly(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	s := &sniffConn{Conn: client, askReadOnly: true, onHandshake: func(handshake) bool { return true }}

	req := append(binary.BigEndian.AppendUint32(nil, 3), 'a', 'b', 'c')
	got := make(chan []byte, 2)
	go func() {
		for i := 0; i < 2; i++ {
			buf := make([]byte, 64)
			n, _ := server.Read(buf)
			got <- buf[:n]
		}
	}()
	n, err := s.Write(req)
	require.NoError(t, err)
	assert.Equal(t, len(req), n, "the caller sees its own length")
	assert.Equal(t, append(binary.BigEndian.AppendUint32(nil, 4), 'a', 'b', 'c', 1), <-got)

	_, err = s.Write(req)
	require.NoError(t, err)
	assert.Equal(t, req, <-got, "later writes pass through untouched")
}

// connectRequest is go-zookeeper's connect request frame.
func connectRequest(sid int64, pw []byte) []byte {
	body := binary.BigEndian.AppendUint32(nil, 0)    // protocol version
	body = binary.BigEndian.AppendUint64(body, 42)   // last zxid seen
	body = binary.BigEndian.AppendUint32(body, 4000) // timeout
	body = binary.BigEndian.AppendUint64(body, uint64(sid))
	body = binary.BigEndian.AppendUint32(body, uint32(len(pw)))
	return frameOf(append(body, pw...))
}

func TestConnectRequestOfASessionThatMayNotBeResumedGoesWithAWrongPassword(t *testing.T) {
	pw := []byte("0123456789abcdef")
	for name, tc := range map[string]struct {
		sid      int64
		resume   bool
		readOnly bool
	}{
		"resumable":                {sid: 7, resume: true},
		"declared lost":            {sid: 7},
		"declared lost, read-only": {sid: 7, readOnly: true},
		"new session is not asked": {sid: 0},
	} {
		t.Run(name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			defer server.Close()
			var asked []int64
			s := &sniffConn{Conn: client, askReadOnly: tc.readOnly,
				mayResume:   func(id int64) bool { asked = append(asked, id); return tc.resume },
				onHandshake: func(handshake) bool { return true }}
			req := connectRequest(tc.sid, pw)
			if tc.sid == 0 {
				req = connectRequest(0, make([]byte, 16))
			}
			got := make(chan []byte, 1)
			go func() {
				buf := make([]byte, 128)
				n, _ := io.ReadAtLeast(server, buf, len(req))
				got <- buf[:n]
			}()
			n, err := s.Write(req)
			require.NoError(t, err)
			assert.Equal(t, len(req), n, "the caller sees its own length")
			out := <-got
			if tc.sid == 0 {
				assert.Empty(t, asked, "a request for a new session resumes nothing")
				assert.Equal(t, req, out)
				return
			}
			assert.Equal(t, []int64{tc.sid}, asked)
			want := append([]byte(nil), req...)
			if !tc.resume {
				for i := range pw {
					want[connectPasswd+i] = ^pw[i]
					assert.NotEqual(t, pw[i], out[connectPasswd+i], "byte %d of the password", i)
				}
			}
			if tc.readOnly {
				binary.BigEndian.PutUint32(want, uint32(len(req)-4+1))
				want = append(want, 1)
			}
			assert.Equal(t, want, out)
			assert.Equal(t, pw, req[connectPasswd:], "go-zookeeper's own buffer is left alone")
		})
	}
}

func TestHandshakeGivingASessionThatMayNotBeHadFailsTheLinkBeforeGoZookeeperReadsIt(t *testing.T) {
	for _, split := range []bool{false, true} {
		sock := &scriptedConn{}
		resp := connectResponse(4000, 7, make([]byte, 16), nil)
		if split {
			sock.chunks = [][]byte{resp[:4], resp[4:]}
		} else {
			sock.chunks = [][]byte{resp}
		}
		s := &sniffConn{Conn: sock, wrote: true, onHandshake: func(h handshake) bool { return h.sessionID != 7 }}
		buf := make([]byte, 4)
		_, err := io.ReadFull(s, buf)
		if split {
			require.NoError(t, err, "the length alone decides nothing")
			_, err = io.ReadFull(s, make([]byte, len(resp)-4))
		}
		require.ErrorIs(t, err, errResumeRefused)
		assert.True(t, sock.closed, "the link is closed")
		_, err = s.Read(buf)
		assert.ErrorIs(t, err, errResumeRefused, "and stays failed")
	}
}

func frameOf(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func createRequest(xid int32, path string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, opCreate)
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	b = append(b, path...)
	return frameOf(append(b, 0, 0, 0, 0)) // + empty data
}

func reply(xid int32, zxid int64, code int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint64(b, uint64(zxid))
	b = binary.BigEndian.AppendUint32(b, uint32(code))
	return frameOf(append(b, body...))
}

func stringBody(s string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
}

// TestTracedCreateIsFollowedThroughSplitReads feeds the reply stream one
// byte at a time: the parser must not depend on how reads split frames.
func TestTracedCreateIsFollowedThroughSplitReads(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	var tr tracer
	s := &sniffConn{Conn: client, onHandshake: func(handshake) bool { return true }, tracer: &tr, wrote: true}
	trace := &Trace{prefix: "/q/_c_abc-", tr: &tr, sent: make(chan struct{})}
	tr.add(trace)

	go func() { _, _ = io.Copy(io.Discard, server) }()
	_, err := s.Write(createRequest(7, "/q/lock-"))
	require.NoError(t, err)
	select {
	case <-trace.Sent():
		t.Fatal("an untraced create marked the trace sent")
	default:
	}
	_, err = s.Write(createRequest(8, "/q/_c_abc-lock-"))
	require.NoError(t, err)
	<-trace.Sent()

	stream := append(connectResponse(4000, 0x99, make([]byte, 16), nil), reply(-1, 5, 0, stringBody("/watched"))...)
	stream = append(stream, reply(7, 10, 0, stringBody("/q/lock-0000000000"))...)
	stream = append(stream, reply(8, 11, 0, stringBody("/q/_c_abc-lock-0000000001"))...)
	for i := range stream {
		s.consume(stream[i : i+1])
	}
	path, zxid, session, ok := trace.Result()
	require.True(t, ok)
	assert.Equal(t, "/q/_c_abc-lock-0000000001", path)
	assert.Equal(t, int64(11), zxid)
	assert.Equal(t, int64(0x99), session)
}

func TestFailedTracedCreateHasNoResult(t *testing.T) {
	var tr tracer
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	go func() { _, _ = io.Copy(io.Discard, server) }()
	s := &sniffConn{Conn: client, onHandshake: func(handshake) bool { return true }, tracer: &tr, wrote: true}
	trace := &Trace{prefix: "/q/_c_abc-", tr: &tr, sent: make(chan struct{})}
	tr.add(trace)
	_, err := s.Write(createRequest(3, "/q/_c_abc-x"))
	require.NoError(t, err)
	s.consume(connectResponse(4000, 1, nil, nil))
	s.consume(reply(3, 12, -110, nil)) // node exists
	_, _, _, ok := trace.Result()
	assert.False(t, ok)
}

// The tracer is indexed (by a create prefix's directory, by a delete's
// path): a request finds its own trace among many, in its own directory
// only, and nothing once the trace is closed.
func TestTracerMatchesAmongManyTraces(t *testing.T) {
	var tr tracer
	create := func(prefix string) *Trace {
		ct := &Trace{prefix: prefix, tr: &tr, sent: make(chan struct{})}
		tr.add(ct)
		return ct
	}
	del := func(path string) *Trace {
		ct := &Trace{prefix: path, delete: true, tr: &tr, sent: make(chan struct{})}
		tr.add(ct)
		return ct
	}
	a := create("/q/_c_a-")
	b := create("/q/_c_b-")
	other := create("/r/_c_a-")
	top := create("/_c_t-")
	d1 := del("/q/_c_a-lock-0000000001")
	d2 := del("/q/_c_a-lock-0000000001") // two deletes of one path: one each
	assert.True(t, tr.active())

	for _, tc := range []struct {
		op   int32
		path string
		want *Trace
	}{
		{opCreate2, "/q/_c_a-lock-", a},
		{opCreateContainer, "/q/_c_b-lock-", b},
		{opCreate, "/r/_c_a-lock-", other},
		{opCreate, "/_c_t-x", top},
		{opCreate, "/q/lock-", nil},          // no trace's prefix
		{opCreate, "/q/sub/_c_a-lock-", nil}, // the prefix, in another directory
		{opCreate, "/q/_c_", nil},            // shorter than every prefix
		{4, "/q/_c_a-lock-", nil},            // getData: not a create
		{opDelete, "/q/_c_a-lock-0000000002", nil},
	} {
		assert.Same(t, tc.want, tr.match(tc.op, []byte(tc.path)), "%d %s", tc.op, tc.path)
	}
	first := tr.match(opDelete, []byte("/q/_c_a-lock-0000000001"))
	require.NotNil(t, first)
	first.Close() // matched: out of the index already, and Close is idempotent
	first.Close()
	second := tr.match(opDelete, []byte("/q/_c_a-lock-0000000001"))
	require.NotNil(t, second)
	assert.NotSame(t, first, second)
	assert.ElementsMatch(t, []*Trace{d1, d2}, []*Trace{first, second})

	for _, ct := range []*Trace{a, b, other, top, second} {
		ct.Close()
	}
	assert.False(t, tr.active())
	assert.Nil(t, tr.match(opCreate, []byte("/q/_c_a-lock-")))
	assert.Empty(t, tr.creates)
	assert.Empty(t, tr.deletes)
}

func deleteRequest(xid int32, path string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, opDelete)
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	b = append(b, path...)
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // version -1
	return frameOf(b)
}

// Two deletes of one path traced at once (two releases racing, say), both
// written before either caller closes its trace: each trace follows one of
// them. Found in review: the second matched the first trace again and its
// caller waited for the reply instead of the send.
func TestTwoDeletesOfOnePathEachMarkTheirTrace(t *testing.T) {
	var tr tracer
	s := &sniffConn{Conn: &scriptedConn{}, tracer: &tr, wrote: true}
	a := &Trace{prefix: "/q/n", delete: true, tr: &tr, sent: make(chan struct{})}
	b := &Trace{prefix: "/q/n", delete: true, tr: &tr, sent: make(chan struct{})}
	tr.add(a)
	tr.add(b)
	for xid := int32(1); xid <= 2; xid++ {
		_, err := s.Write(deleteRequest(xid, "/q/n"))
		require.NoError(t, err)
	}
	for name, ct := range map[string]*Trace{"first": a, "second": b} {
		select {
		case <-ct.Sent():
		default:
			t.Errorf("the %s trace never saw its delete sent", name)
		}
	}
	a.Close()
	b.Close()
	assert.False(t, tr.active())
}
