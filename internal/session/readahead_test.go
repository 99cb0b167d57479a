package session

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedConn answers each Read with the next chunk of a script (an error
// once the script is out), and records what reaches the socket.
type scriptedConn struct {
	net.Conn // nil: only what is below is used
	chunks   [][]byte
	err      error // with the last chunk, then alone
	reads    int
	readDL   []time.Time
	writeDL  []time.Time
	written  bytes.Buffer
	closed   bool
}

func (s *scriptedConn) Read(b []byte) (int, error) {
	s.reads++
	if len(s.readDL) > 0 {
		if dl := s.readDL[len(s.readDL)-1]; !dl.IsZero() && time.Now().After(dl) {
			return 0, os.ErrDeadlineExceeded
		}
	}
	if len(s.chunks) == 0 {
		return 0, s.err
	}
	n := copy(b, s.chunks[0])
	if s.chunks[0] = s.chunks[0][n:]; len(s.chunks[0]) == 0 {
		s.chunks = s.chunks[1:]
	}
	if len(s.chunks) == 0 {
		return n, s.err
	}
	return n, nil
}

func (s *scriptedConn) Write(b []byte) (int, error) {
	if len(s.writeDL) > 0 {
		if dl := s.writeDL[len(s.writeDL)-1]; !dl.IsZero() && time.Now().After(dl) {
			return 0, os.ErrDeadlineExceeded
		}
	}
	return s.written.Write(b)
}

func (s *scriptedConn) SetReadDeadline(t time.Time) error {
	s.readDL = append(s.readDL, t)
	return nil
}

func (s *scriptedConn) SetWriteDeadline(t time.Time) error {
	s.writeDL = append(s.writeDL, t)
	return nil
}

func (s *scriptedConn) Close() error {
	s.closed = true
	return nil
}

// readFrames reads n frames as go-zookeeper does (the 4-byte length, then
// the body, each under a fresh deadline cleared after).
func readFrames(t *testing.T, c net.Conn, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for range n {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
		var head [4]byte
		_, err := io.ReadFull(c, head[:])
		require.NoError(t, err)
		body := make([]byte, binary.BigEndian.Uint32(head[:]))
		_, err = io.ReadFull(c, body)
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Time{}))
		out = append(out, append(head[:], body...))
	}
	return out
}

// Frames that arrive together are read from the socket once, handed out
// whole and in order, and seen by the frame parser (here: the replies
// prove the link with their requests' send times).
func TestReadAheadHandsOutFramesInOrderFromOneSocketRead(t *testing.T) {
	a := reply(7, 10, 0, stringBody("/q/a"))
	b := reply(-1, 11, 0, stringBody("/watched")) // a watch event
	c := reply(8, 12, 0, stringBody("/q/c"))
	sock := &scriptedConn{chunks: [][]byte{append(append(append([]byte{}, a...), b...), c...)}}
	s := &sniffConn{Conn: sock, onHandshake: func(handshake) bool { return true }, wrote: true, handshaken: true}
	s.sent = map[int32]sendTimes{7: {first: sent{at: 100, quorum: true}}, 8: {first: sent{at: 200, quorum: true}}}

	got := readFrames(t, s, 3)
	assert.Equal(t, [][]byte{a, b, c}, got)
	assert.Equal(t, 1, sock.reads, "three frames, one system call")
	assert.Equal(t, int64(200), s.lastProof.Load())
	assert.Empty(t, s.sent)
	// One deadline reached the socket: the one in force when it was read.
	require.Len(t, sock.readDL, 1)
	assert.False(t, sock.readDL[0].IsZero())
}

// A frame split across socket reads, and a body longer than the read-ahead
// (read straight into go-zookeeper's buffer), come through unchanged.
func TestReadAheadSplitAndLongFrames(t *testing.T) {
	long := reply(9, 13, 0, stringBody(string(bytes.Repeat([]byte("x"), 3*readAhead))))
	short := reply(10, 14, 0, stringBody("/q/s"))
	stream := append(append([]byte{}, short...), long...)
	sock := &scriptedConn{chunks: [][]byte{stream[:3], stream[3:20], stream[20:]}}
	s := &sniffConn{Conn: sock, onHandshake: func(handshake) bool { return true }, wrote: true, handshaken: true}
	s.sent = map[int32]sendTimes{9: {first: sent{at: 300, quorum: true}}, 10: {first: sent{at: 250, quorum: true}}}

	got := readFrames(t, s, 2)
	assert.Equal(t, [][]byte{short, long}, got)
	assert.Equal(t, int64(300), s.lastProof.Load())
}

// The deadline go-zookeeper sets is the one a socket read runs under: a
// passed one times the read out (and closes the link, as before), however
// many times it was set and cleared while frames came from the buffer.
func TestReadAheadAppliesTheDeadlineInForceAtTheSocketRead(t *testing.T) {
	a := reply(7, 10, 0, stringBody("/q/a"))
	sock := &scriptedConn{chunks: [][]byte{a}}
	s := &sniffConn{Conn: sock, onHandshake: func(handshake) bool { return true }, wrote: true, handshaken: true}
	readFrames(t, s, 1)

	require.NoError(t, s.SetReadDeadline(time.Now().Add(-time.Second)))
	_, err := s.Read(make([]byte, 4))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.True(t, sock.closed, "a timed-out link is closed at once")
}

// The error that ends the socket after some bytes comes after those bytes,
// every time it is asked for.
func TestReadAheadReportsTheSocketsErrorAfterItsBytes(t *testing.T) {
	a := reply(7, 10, 0, stringBody("/q/a"))
	sock := &scriptedConn{chunks: [][]byte{a}, err: io.EOF}
	s := &sniffConn{Conn: sock, onHandshake: func(handshake) bool { return true }, wrote: true, handshaken: true}
	assert.Equal(t, [][]byte{a}, readFrames(t, s, 1))
	for range 2 {
		_, err := s.Read(make([]byte, 4))
		assert.True(t, errors.Is(err, io.EOF))
	}
}

// A write runs under the write deadline last set: a passed one fails it,
// and clearing it after a write costs the socket nothing.
func TestWriteDeadlineAppliedAtTheWrite(t *testing.T) {
	sock := &scriptedConn{}
	s := &sniffConn{Conn: sock, wrote: true}
	for range 3 {
		require.NoError(t, s.SetWriteDeadline(time.Now().Add(time.Minute)))
		_, err := s.Write(createRequest(1, "/q/a"))
		require.NoError(t, err)
		require.NoError(t, s.SetWriteDeadline(time.Time{}))
	}
	assert.Len(t, sock.writeDL, 3, "one deadline per write reached the socket")

	require.NoError(t, s.SetWriteDeadline(time.Now().Add(-time.Second)))
	_, err := s.Write(createRequest(2, "/q/b"))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

// go-zookeeper waits ten receive timeouts for the connect response; the
// sniffer brings that in to handshakeWithin from the request, and leaves
// later deadlines (and a cleared one) alone.
func TestHandshakeWaitIsBounded(t *testing.T) {
	sock := &scriptedConn{}
	s := &sniffConn{Conn: sock, handshakeWithin: 50 * time.Millisecond, onHandshake: func(handshake) bool { return true }}
	_, err := s.Write(connectRequest(0, make([]byte, 16)))
	require.NoError(t, err)
	require.NoError(t, s.SetReadDeadline(time.Now().Add(time.Minute)))
	_, _ = s.Read(make([]byte, 4)) // applies the deadline to the socket
	require.NotEmpty(t, sock.readDL)
	assert.WithinDuration(t, monoTime(s.connectSent).Add(50*time.Millisecond), sock.readDL[len(sock.readDL)-1], 10*time.Millisecond)

	soon := time.Now().Add(10 * time.Millisecond)
	require.NoError(t, s.SetReadDeadline(soon))
	assert.Equal(t, soon, s.readDeadline, "an earlier deadline stands")
	require.NoError(t, s.SetReadDeadline(time.Time{}))
	assert.True(t, s.readDeadline.IsZero(), "a cleared deadline stays cleared")
}
