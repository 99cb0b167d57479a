package main

import (
	"context"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
)

func TestDevServesUntilSIGTERMThenStopsTheServer(t *testing.T) {
	if os.Getenv("ZK_CONNECT") != "" {
		t.Skip("zkr dev starts a local server; ZK_CONNECT names an external one, and a local install may be missing")
	}
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p := start(t, "dev", "--port", strconv.Itoa(port))
	select {
	case l := <-p.lines:
		require.Equal(t, addr, l, "the first line is the connect string")
	case <-p.done:
		t.Fatalf("zkr dev exited %d: %s", p.res.code, p.res.stderr)
	case <-time.After(90 * time.Second):
		t.Fatalf("zkr dev printed nothing in 90s: %s", p.stderr.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, []string{addr})
	require.NoError(t, err, "no session with zkr dev")
	_, err = c.Create(ctx, "/hello", []byte("dev"))
	assert.NoError(t, err)
	c.Close()

	p.signal(t, syscall.SIGTERM)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 0, r.code, r.stderr)
	// The JVM is zkr dev's child, invisible to zktest.OwnJVMs: its port
	// tells whether it is gone.
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the server still listens after zkr dev exited")
}

func TestDevPicksAFreePort(t *testing.T) {
	if os.Getenv("ZK_CONNECT") != "" {
		t.Skip("zkr dev starts a local server; ZK_CONNECT names an external one, and a local install may be missing")
	}
	p := start(t, "dev")
	select {
	case l := <-p.lines:
		assert.Regexp(t, `^127\.0\.0\.1:\d+$`, l)
	case <-time.After(90 * time.Second):
		t.Fatalf("zkr dev printed nothing in 90s: %s", p.stderr.String())
	}
	p.signal(t, syscall.SIGINT)
	assert.Equal(t, 0, p.wait(t, 30*time.Second).code)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Without a local server zkr dev says how to get one, and how to use a
// server that runs, which is --connect: its hint named ZK_CONNECT, which
// zkr dev ignores (it always starts its own server).
func TestDevWithoutALocalServerHintsAtWhatWorks(t *testing.T) {
	for name, env := range map[string][]string{
		"ZK_CONNECT unset": {"ZK_HOME=" + t.TempDir()},
		"ZK_CONNECT set":   {"ZK_HOME=" + t.TempDir(), "ZK_CONNECT=127.0.0.1:1"},
	} {
		t.Run(name, func(t *testing.T) {
			r := startWith(t, env, "dev").wait(t, time.Minute)
			assert.Equal(t, exitFailed, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, "no local ZooKeeper")
			assert.Contains(t, r.stderr, "apt-get install -y zookeeper")
			assert.Contains(t, r.stderr, "ZK_HOME")
			assert.Contains(t, r.stderr, "--connect HOST:PORT")
			assert.NotContains(t, r.stderr, "ZK_CONNECT", "zkr dev ignores ZK_CONNECT")
		})
	}
}
