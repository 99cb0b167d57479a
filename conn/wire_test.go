package conn

import (
	"encoding/binary"
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
	s := &sniffConn{Conn: client, askReadOnly: true, onHandshake: func(handshake) {}}

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
