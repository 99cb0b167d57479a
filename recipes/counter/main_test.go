package counter_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

func newClient(t *testing.T, addrs []string, opts ...framework.Option) *framework.Client {
	return testkit.Client(t, addrs, opts...)
}

func ctxT(t *testing.T, d time.Duration) context.Context { return testkit.Ctx(t, d) }

func newLong(t *testing.T, c *framework.Client, path string, opts ...counter.Option) *counter.Long {
	t.Helper()
	l, err := counter.NewLong(c, path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// raw reads the node as the server has it (nil, false if it does not
// exist).
func raw(t *testing.T, c *framework.Client, path string) ([]byte, bool) {
	t.Helper()
	data, _, err := c.Get(ctxT(t, 10*time.Second), path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false
	}
	require.NoError(t, err)
	return data, true
}

// rawLong reads the node as Curator's 8-byte big-endian long.
func rawLong(t *testing.T, c *framework.Client, path string) int64 {
	t.Helper()
	data, ok := raw(t, c, path)
	require.True(t, ok, "%s does not exist", path)
	require.Len(t, data, 8, "%s: % x", path, data)
	return int64(binary.BigEndian.Uint64(data))
}

// holdMutex takes the mutex at path with c, as a rival holder would.
func holdMutex(t *testing.T, c *framework.Client, path string) *hold.Hold {
	t.Helper()
	m, err := mutex.New(c, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	return h
}

// Every write of a counter is one multi (framework.Client.MultiOnce, or
// hold.Fenced's under the promoted lock), sent after the try's read: the
// fault proxy holds it, or loses its reply, to put a rival write or a
// fault between a try's read and its write. The rival's client must not
// be behind that proxy.

// start runs call on a goroutine of its own; the channel closes when it
// returns.
func start(call func()) <-chan struct{} {
	done := make(chan struct{})
	go func() { defer close(done); call() }()
	return done
}

// waitHeld waits until p holds the request a StallRequestsFrom armed it
// for, and fails t if the call under way (done) returned without sending
// it.
func waitHeld(t *testing.T, p *zktest.Proxy, done <-chan struct{}) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !p.Stalled() {
		select {
		case <-done:
			require.True(t, p.Stalled(), "the call returned before it sent its write")
			return
		case <-deadline:
			t.Fatal("the call never sent its write")
		case <-time.After(time.Millisecond): // polling interval
		}
	}
}

// finished waits for the call under way (done) to return.
func finished(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the call did not return")
	}
}

// betweenReadAndWrite runs call, a counter operation whose client is
// behind p, with meanwhile run, on the test's goroutine, while its first
// write is held at the proxy: after the try's read, before the write
// reaches the server.
func betweenReadAndWrite(t *testing.T, p *zktest.Proxy, call, meanwhile func()) {
	t.Helper()
	p.StallRequestsFrom(zktest.OpMulti)
	t.Cleanup(p.Release)
	done := start(call)
	waitHeld(t, p, done)
	meanwhile()
	p.Release()
	finished(t, done)
}
