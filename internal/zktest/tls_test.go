package zktest_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// connectTLS is connect over TLS: dial completes a handshake with cfg before
// go-zookeeper sees the connection. It returns how many handshakes succeeded.
func connectTLS(t *testing.T, addrs []string, cfg *tls.Config) (*zk.Conn, *recorder, *atomic.Int32) {
	t.Helper()
	handshakes := new(atomic.Int32)
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, cfg)
		if err == nil {
			handshakes.Add(1)
		}
		return c, err
	}
	r := &recorder{change: make(chan struct{})}
	c, _, err := zk.Connect(addrs, 4*time.Second,
		zk.WithDialer(dial),
		zk.WithEventCallback(r.callback),
		zk.WithLogger(log.New(io.Discard, "", 0)),
		zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	r.waitSeq(t, 0, 30*time.Second, zk.StateHasSession)
	return c, r, handshakes
}

func TestTLS(t *testing.T) {
	tl := zktest.NewTLS(t)
	cl := zktest.Standalone(t, zktest.WithTLS(tl))

	t.Run("direct", func(t *testing.T) {
		c, _, handshakes := connectTLS(t, []string{cl.Server(1).SecureAddr()}, tl.ClientConfig())
		_, err := c.Create("/tls", []byte("secret"), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		data, _, err := c.Get("/tls")
		require.NoError(t, err)
		assert.Equal(t, "secret", string(data))
		assert.Equal(t, int32(1), handshakes.Load())

		// Same server, plain port: TLS is an extra listener, not a switch.
		plain, _ := connect(t, cl.DirectAddrs(), 4*time.Second)
		data, _, err = plain.Get("/tls")
		require.NoError(t, err)
		assert.Equal(t, "secret", string(data))
	})

	t.Run("through shared proxy", func(t *testing.T) {
		c, _, err := zk.Connect(cl.SecureAddrs(), 4*time.Second, zk.WithDialer(tl.Dial),
			zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithLogInfo(false))
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Create("/via-proxy", nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	})

	t.Run("untrusted CA fails the handshake", func(t *testing.T) {
		other := zktest.NewTLS(t)
		for _, addr := range append([]string{cl.Server(1).SecureAddr()}, cl.SecureAddrs()...) {
			conn, err := other.Dial("tcp", addr, 5*time.Second)
			require.Error(t, err, addr)
			assert.Nil(t, conn)
			var unknown x509.UnknownAuthorityError
			assert.ErrorAs(t, err, &unknown, addr)
		}
	})

	t.Run("plain client on the TLS port gets no session", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", cl.Server(1).SecureAddr(), 5*time.Second)
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
		// A ConnectRequest in plaintext: length 44, then zeros. The server
		// takes it for a bad TLS record and closes the connection.
		req := make([]byte, 48)
		req[3] = 44
		_, _ = conn.Write(req)
		n, err := conn.Read(make([]byte, 64))
		assert.Error(t, err, "the server answered a plaintext client on the TLS port")
		assert.Zero(t, n)
	})

	t.Run("cut on a private secure proxy", func(t *testing.T) {
		p := cl.NewSecureProxy()
		c, r, handshakes := connectTLS(t, p.Addrs(), tl.ClientConfig())
		sid := c.SessionID()
		from := r.len()
		p.Cut()
		r.waitSeq(t, from, 10*time.Second, zk.StateDisconnected, zk.StateHasSession)
		assert.Equal(t, sid, c.SessionID())
		assert.GreaterOrEqual(t, handshakes.Load(), int32(2), "the reconnect is a new handshake")
		_, _, err := c.Exists("/tls")
		assert.NoError(t, err)
	})
}

func TestMutualTLS(t *testing.T) {
	tl := zktest.NewTLS(t)
	cl := zktest.Standalone(t, zktest.WithMutualTLS(tl))
	addr := cl.Server(1).SecureAddr()

	c, _, _ := connectTLS(t, []string{addr}, tl.ClientConfig())
	_, err := c.Create("/mtls", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	anonymous := tl.ClientConfig()
	anonymous.Certificates = nil
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, anonymous)
	require.Error(t, err, "a server requiring client certificates accepted an anonymous client")
	assert.Nil(t, conn)
	// The server refuses with an alert (crypto/tls reports a received alert
	// as a "remote error"), not by dropping the connection.
	var opErr *net.OpError
	if assert.True(t, errors.As(err, &opErr), "got %v", err) {
		assert.Equal(t, "remote error", opErr.Op, "got %v", err)
	}
}

func TestEnsembleTLS(t *testing.T) {
	tl := zktest.NewTLS(t)
	cl := zktest.Ensemble(t, 3, zktest.WithTLS(tl))
	c, _, _ := connectTLS(t, cl.SecureAddrs(), tl.ClientConfig())
	writeEventually(t, c, "/ensemble-tls", 10*time.Second)
	for _, s := range cl.Servers() {
		conn, err := tl.Dial("tcp", s.SecureAddr(), 5*time.Second)
		require.NoError(t, err, "server %d", s.ID)
		require.NoError(t, conn.Close())
	}
}
