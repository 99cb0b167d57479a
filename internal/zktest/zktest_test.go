package zktest_test

import (
	"errors"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder collects a raw client's session events; the conn package does
// this properly, but the harness must be testable without it.
type recorder struct {
	mu     sync.Mutex
	states []zk.State
	change chan struct{}
}

func (r *recorder) callback(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	r.mu.Lock()
	r.states = append(r.states, ev.State)
	close(r.change)
	r.change = make(chan struct{})
	r.mu.Unlock()
}

// waitSeq waits until want appears, in order, among the states seen since
// index from; it returns the index after the last match.
func (r *recorder) waitSeq(t *testing.T, from int, timeout time.Duration, want ...zk.State) int {
	t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		i, j := from, 0
		for ; i < len(r.states) && j < len(want); i++ {
			if r.states[i] == want[j] {
				j++
			}
		}
		seen, change := append([]zk.State(nil), r.states...), r.change
		r.mu.Unlock()
		if j == len(want) {
			return i
		}
		select {
		case <-change:
		case <-deadline:
			t.Fatalf("states %v after index %d: want %v in order", seen, from, want)
		}
	}
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.states)
}

func connect(t *testing.T, addrs []string, sessionTimeout time.Duration) (*zk.Conn, *recorder) {
	t.Helper()
	r := &recorder{change: make(chan struct{})}
	c, _, err := zk.Connect(addrs, sessionTimeout,
		zk.WithEventCallback(r.callback),
		zk.WithLogger(log.New(io.Discard, "", 0)),
		zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	r.waitSeq(t, 0, 30*time.Second, zk.StateHasSession)
	return c, r
}

// writeEventually retries a write through the reconnects a fault causes.
func writeEventually(t *testing.T, c *zk.Conn, path string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, err := c.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("create %s: %v", path, err)
		}
		time.Sleep(20 * time.Millisecond) // pacing retries of a failed write
	}
}

func TestStandaloneRestartKeepsData(t *testing.T) {
	cl := zktest.Standalone(t)
	c, _ := connect(t, cl.Addrs(), 4*time.Second)
	_, err := c.Create("/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	cl.Server(1).Restart()
	assert.Equal(t, "standalone", cl.Server(1).Mode())

	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _, err := c.Get("/kept")
		if err == nil {
			assert.Equal(t, "v", string(data))
			return
		}
		require.True(t, time.Now().Before(deadline), "get after restart: %v", err)
		time.Sleep(20 * time.Millisecond) // pacing reads while the client reconnects
	}
}

func TestStoppedServerRefusesThenServesAfterStart(t *testing.T) {
	cl := zktest.Standalone(t)
	s := cl.Server(1)
	s.Stop()
	assert.False(t, s.Running())
	assert.Equal(t, "", s.Mode())
	s.Start()
	assert.True(t, s.Running())
	assert.Equal(t, "standalone", s.Mode())
}

func TestEnsembleServesWithOneMemberDownAndRefusesWithTwo(t *testing.T) {
	cl := zktest.Ensemble(t, 3)
	c, _ := connect(t, cl.Addrs(), 4*time.Second)
	writeEventually(t, c, "/a", 10*time.Second)

	leader := cl.Leader(10 * time.Second)
	leader.Kill()
	writeEventually(t, c, "/b", 30*time.Second) // a new leader is elected
	newLeader := cl.Leader(10 * time.Second)
	assert.NotEqual(t, leader.ID, newLeader.ID)

	for _, s := range cl.Servers() {
		if s.Running() && s != newLeader {
			s.Kill()
			break
		}
	}
	// One of three left: no quorum, so the survivor stops serving and a
	// write cannot succeed.
	deadline := time.Now().Add(20 * time.Second)
	for newLeader.Mode() != "" {
		require.True(t, time.Now().Before(deadline), "lone survivor still serving")
		time.Sleep(50 * time.Millisecond) // polling the server's role
	}
	_, err := c.Create("/c", nil, 0, zk.WorldACL(zk.PermAll))
	assert.Error(t, err)
}

func TestFiveNodeEnsembleSurvivesTwoMembersDown(t *testing.T) {
	cl := zktest.Ensemble(t, 5)
	c, _ := connect(t, cl.Addrs(), 4*time.Second)
	cl.Server(1).Kill()
	cl.Server(2).Kill()
	writeEventually(t, c, "/x", 30*time.Second)
}

func TestCutDisconnectsThenReconnectsSameSession(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c, r := connect(t, p.Addrs(), 4*time.Second)
	sid := c.SessionID()
	from := r.len()

	p.Cut()
	r.waitSeq(t, from, 10*time.Second, zk.StateDisconnected, zk.StateHasSession)
	assert.Equal(t, sid, c.SessionID())
	_, _, err := c.Exists("/")
	assert.NoError(t, err)
}

func TestLongBlackholeExpiresSession(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c, r := connect(t, p.Addrs(), 2*time.Second)
	sid := c.SessionID()
	_, err := c.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	from := r.len()

	zktest.ExpireSession(t, p, sid)
	assert.False(t, cl.SessionAlive(sid))

	r.waitSeq(t, from, 20*time.Second, zk.StateDisconnected, zk.StateExpired, zk.StateHasSession)
	assert.NotEqual(t, sid, c.SessionID())
	ok, _, err := c.Exists("/eph")
	require.NoError(t, err)
	assert.False(t, ok, "the expired session's ephemeral must be gone")
}

func TestDropRepliesAppliesWritesSilently(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c, _ := connect(t, p.Addrs(), 3*time.Second)
	observer, _ := connect(t, cl.DirectAddrs(), 3*time.Second)
	sid := c.SessionID()

	p.DropReplies()
	_, err := c.Create("/applied", nil, 0, zk.WorldACL(zk.PermAll))
	assert.ErrorIs(t, err, zk.ErrConnectionClosed, "the client never hears back")
	ok, _, err := observer.Exists("/applied")
	require.NoError(t, err)
	assert.True(t, ok, "the server applied the write")
	p.Heal()
	assert.True(t, cl.SessionAlive(sid), "requests kept reaching the server, so the session lives")
}

// A reply the server sent just before DropReplies may still sit unread in the
// proxy; it must not reach the client after Heal. So Heal resets every link
// that was open during the drop, even one on which nothing was read since.
func TestHealAfterDropRepliesResetsEveryLink(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c, r := connect(t, p.Addrs(), 10*time.Second) // pings far apart: the link stays idle
	sid := c.SessionID()
	from := r.len()

	p.DropReplies()
	p.Heal()
	r.waitSeq(t, from, 10*time.Second, zk.StateDisconnected, zk.StateHasSession)
	assert.Equal(t, sid, c.SessionID(), "a reset, not an expiry")
}

func TestDelaySlowsRequests(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c, _ := connect(t, p.Addrs(), 4*time.Second)
	p.Delay(100 * time.Millisecond)
	start := time.Now()
	_, _, err := c.Exists("/")
	require.NoError(t, err)
	// A lower bound only: the delay applies on the way there and back.
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	p.Heal()
}

// Lag delays both ways, byte by byte in order, so that one request takes
// two lags while requests in flight together share them.
func TestLagDelaysBothWaysAndKeepsPipelining(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c, _ := connect(t, p.Addrs(), 10*time.Second)
	const lag = 100 * time.Millisecond
	p.Lag(lag)
	start := time.Now()
	_, _, err := c.Exists("/")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 2*lag)

	// Ten requests sent one after another take ten round trips; sent
	// together, the lags overlap. The bound is loose on purpose: five
	// round trips against the ten a lag per chunk, not per byte, costs.
	start = time.Now()
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Create("/lag-"+strconv.Itoa(i), nil, 0, zk.WorldACL(zk.PermAll))
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 2*lag)
	assert.Less(t, took, 10*lag, "requests in flight together each waited out the lag in turn")
	p.Heal()
	start = time.Now()
	_, _, err = c.Exists("/")
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 2*lag, "Heal ends the lag")
}

// WithCPUs confines the server's JVM, every thread of it.
func TestWithCPUsConfinesTheServer(t *testing.T) {
	zktest.Standalone(t, zktest.WithCPUs("0"))
	pids := zktest.OwnJVMs()
	require.Len(t, pids, 1)
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pids[0]) + "/task/*/status")
	require.NoError(t, err)
	require.NotEmpty(t, tasks)
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.Contains(t, string(b), "Cpus_allowed_list:\t0\n", f)
	}
}

func TestNoJVMSurvivesCleanup(t *testing.T) {
	t.Run("ensemble", func(t *testing.T) {
		cl := zktest.Ensemble(t, 3)
		require.NotEmpty(t, zktest.OwnJVMs())
		cl.Server(2).Kill() // a dead member must not trip the cleanup
	})
	assert.Empty(t, zktest.OwnJVMs(), "java processes left behind")
}

// DropRepliesFrom lets the reads before the aimed-at write through, and
// loses the write's reply only: the server applies it.
func TestDropRepliesFromLosesOnlyTheAimedAtRequestsReply(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c, _ := connect(t, p.Addrs(), 3*time.Second)
	observer, _ := connect(t, cl.DirectAddrs(), 3*time.Second)
	_, err := c.Create("/doomed", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	p.DropRepliesFrom(zktest.OpDelete)
	ok, _, err := c.Exists("/doomed")
	require.NoError(t, err, "a read before the delete is answered")
	require.True(t, ok)
	assert.ErrorIs(t, c.Delete("/doomed", -1), zk.ErrConnectionClosed, "the client never hears back")
	ok, _, err = observer.Exists("/doomed")
	require.NoError(t, err)
	assert.False(t, ok, "the server applied the delete")
	p.Heal()
}

// DropRequestsFrom lets the requests before the aimed-at one through, and
// the server never sees it.
func TestDropRequestsFromNeverDeliversTheAimedAtRequest(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c, _ := connect(t, p.Addrs(), 3*time.Second)
	observer, _ := connect(t, cl.DirectAddrs(), 3*time.Second)

	p.DropRequestsFrom(zktest.OpCreate)
	ok, _, err := c.Exists("/never")
	require.NoError(t, err, "a read before the create is answered")
	require.False(t, ok)
	_, err = c.Create("/never", nil, 0, zk.WorldACL(zk.PermAll))
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
	p.Heal()
	ok, _, err = observer.Exists("/never")
	require.NoError(t, err)
	assert.False(t, ok, "the server never saw the create")
	// go-zookeeper gives up a request with "could not connect" while its
	// reconnect is still on its way (seen on a loaded machine): the client
	// is back once a read succeeds.
	require.Eventually(t, func() bool {
		ok, _, err = c.Exists("/never")
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the client is back after Heal")
	assert.False(t, ok)
}

// Requests counts what clients send, not their pings.
func TestRequestsCountsRequestsButNotPings(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c, _ := connect(t, p.Addrs(), 1500*time.Millisecond) // a ping every half second or so
	before := p.Requests()
	// Absence over a window in which several pings go by.
	assert.Never(t, func() bool { return p.Requests() != before }, 2*time.Second, 20*time.Millisecond, "pings are not requests")
	for range 3 {
		_, _, err := c.Exists("/")
		require.NoError(t, err)
	}
	assert.Equal(t, before+3, p.Requests())
}

// RequestsOf counts the requests of the types asked for, each once, and
// no others.
func TestRequestsOfCountsOnlyTheTypesAskedFor(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c, _ := connect(t, p.Addrs(), 10*time.Second)
	lists, exists := p.RequestsOf(zktest.OpGetChildren2), p.RequestsOf(zktest.OpExists)
	for range 2 {
		_, _, err := c.Children("/")
		require.NoError(t, err)
	}
	_, _, err := c.Exists("/")
	require.NoError(t, err)
	_, err = c.Create("/counted", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	assert.Equal(t, lists+2, p.RequestsOf(zktest.OpGetChildren2))
	assert.Equal(t, exists+1, p.RequestsOf(zktest.OpExists))
	assert.Equal(t, lists+exists+4, p.RequestsOf(zktest.OpGetChildren2, zktest.OpExists, zktest.OpCreate))
}

// StallRequestsFrom holds the aimed-at request until Release, while the
// requests before it are answered; then it goes through, in order.
func TestStallRequestsFromHoldsTheAimedAtRequestUntilRelease(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c, _ := connect(t, p.Addrs(), 10*time.Second)
	observer, _ := connect(t, cl.DirectAddrs(), 3*time.Second)

	p.StallRequestsFrom(zktest.OpCreate)
	ok, _, err := c.Exists("/held")
	require.NoError(t, err, "a read before the create is answered")
	require.False(t, ok)
	done := make(chan error, 1)
	go func() {
		_, err := c.Create("/held", nil, 0, zk.WorldACL(zk.PermAll))
		done <- err
	}()
	require.Eventually(t, p.Stalled, 10*time.Second, 5*time.Millisecond)
	_, err = observer.Create("/other", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err, "others go on")
	ok, _, err = observer.Exists("/held")
	require.NoError(t, err)
	assert.False(t, ok, "the held create reached the server")
	p.Release()
	require.NoError(t, <-done)
	assert.False(t, p.Stalled())
}
