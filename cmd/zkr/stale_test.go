package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// awaitStderr waits until zkr's stderr has said want, count times in all.
func (p *proc) awaitStderr(t *testing.T, want string, count int, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Count(p.stderr.String(), want) >= count }, timeout, 20*time.Millisecond,
		"zkr never said %q (%d times); stderr:\n%s", want, count, p.stderr.String())
}

// staleWatch starts zkr ARGS on a proxy of its own in front of a server
// where /watched has a mutex holder, and waits for the first line of what
// it shows: the watch is up.
func staleWatch(t *testing.T, first string, argv ...string) (*zktest.Proxy, *proc) {
	t.Helper()
	cl, _ := server(t)
	m, err := mutex.New(client(t, cl), "/watched", mutex.WithParticipantID("holder"))
	require.NoError(t, err)
	holdMutex(t, m)
	px := cl.NewProxy()
	t.Cleanup(px.Close)
	// A session that outlives the first blackhole, healed once zkr says
	// the link is down (testkit.CutSessionTimeout's doc): with 3s, the
	// server expired it as go-zookeeper dialled again, and the second
	// blackhole's "session lost" had been said already.
	p := start(t, append([]string{"--connect", px.ConnectString(), "--session-timeout", testkit.CutSessionTimeout.String()}, argv...)...)
	require.Regexp(t, first, p.nextLine(t))
	return px, p
}

// zkr ls --watch -v says when the queue it shows may be stale (its link
// to ZooKeeper is down, its session lost) and when it is current again;
// it said nothing, and went on showing the last queue as if current.
func TestLsWatchSaysWhenItsViewIsStaleAndWhenCurrentAgain(t *testing.T) {
	px, p := staleWatch(t, `^/watched: lock, 1 holding, 0 waiting`, "-v", "ls", "--watch", "/watched")

	px.Blackhole() // a frozen server: the link goes down, the session lives on
	p.awaitStderr(t, "zkr ls: link to ZooKeeper down: the queue shown may be stale", 1, 30*time.Second)
	px.Heal()
	p.awaitStderr(t, "zkr ls: link to ZooKeeper back: the queue shown is current again", 1, 30*time.Second)

	px.Blackhole() // for longer than the session timeout: the session is lost
	p.awaitStderr(t, "zkr ls: session lost: the queue shown may be stale until a new session looks again", 1, time.Minute)
	px.Heal()
	p.awaitStderr(t, "zkr ls: link to ZooKeeper back: the queue shown is current again", 2, 30*time.Second)

	p.signal(t, syscall.SIGINT)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGINT), r.code, r.stderr)
}

// zkr leader --watch -v says so too, and goes on printing the leader's
// changes once current again.
func TestLeaderWatchSaysWhenItsViewIsStaleAndWhenCurrentAgain(t *testing.T) {
	px, p := staleWatch(t, `^holder$`, "-v", "leader", "--watch", "/watched")

	px.Blackhole()
	p.awaitStderr(t, "zkr leader: link to ZooKeeper down: the leader shown may be stale", 1, 30*time.Second)
	px.Heal()
	p.awaitStderr(t, "zkr leader: link to ZooKeeper back: the leader shown is current again", 1, 30*time.Second)

	px.Blackhole()
	p.awaitStderr(t, "zkr leader: session lost: the leader shown may be stale until a new session looks again", 1, time.Minute)
	px.Heal()
	p.awaitStderr(t, "zkr leader: link to ZooKeeper back: the leader shown is current again", 2, 30*time.Second)

	p.signal(t, syscall.SIGTERM)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGTERM), r.code, r.stderr)
	assert.Equal(t, "holder\n", r.stdout, "the leader never changed")
}
