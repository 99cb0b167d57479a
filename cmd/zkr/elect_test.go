package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func TestElectRunsCommandOnlyWhileLeading(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	dir := t.TempDir()
	release, ranTwo := filepath.Join(dir, "release"), filepath.Join(dir, "two")
	one := start(t, args(connect, cmd("elect", "--id", "one", "/election"),
		sh(`echo "one leads $ZKR_FENCING_TOKEN"; `+waitFile(release)))...)
	select {
	case l := <-one.lines:
		assert.True(t, strings.HasPrefix(l, "one leads "), l)
	case <-time.After(30 * time.Second):
		t.Fatalf("one never led: %s", one.stderr.String())
	}
	two := start(t, args(connect, cmd("elect", "--id", "two", "/election"),
		sh(`touch `+ranTwo+`; echo "two leads"; exit 3`))...)
	waitChildren(t, c, "/election", 2)

	r := zkr(t, args(connect, cmd("leader", "/election"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "one\ntwo\n", r.stdout)
	_, err := os.Stat(ranTwo)
	assert.True(t, os.IsNotExist(err), "two ran while one led")

	require.NoError(t, touch(release))
	assert.Equal(t, 0, one.wait(t, 30*time.Second).code)
	two.expectLine(t, "two leads")
	assert.Equal(t, 3, two.wait(t, 30*time.Second).code, "without --requeue zkr exits with COMMAND's status")
	assert.Empty(t, children(t, c, "/election"))
}

// A campaign that cannot even queue (here: a parent that is ephemeral, so
// the queue node cannot be made) ends zkr elect with 125, not a hang.
func TestElectThatCannotQueueExits125(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	_, err := c.Create(t.Context(), "/eph", nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	r := zkr(t, args(connect, cmd("elect", "/eph/election"), sh("echo ran"))...)
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Empty(t, r.stdout, "COMMAND ran without leading")
	assert.Empty(t, children(t, c, "/eph"))
}

func TestElectRequeueRunsAgainUntilSignalled(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	p := start(t, args(connect, cmd("elect", "--requeue", "/again"), sh(`echo term; sleep 0.1`))...)
	for range 3 {
		p.expectLine(t, "term")
	}
	p.signal(t, syscall.SIGTERM)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGTERM), r.code, r.stderr)
	assert.Empty(t, children(t, c, "/again"), "zkr left its node behind")
}

func TestElectLostStopsCommandAndExits122(t *testing.T) {
	cl, _ := server(t)
	p := cl.NewProxy()
	termed := filepath.Join(t.TempDir(), "termed")
	z := start(t, args(cmd("--connect", p.ConnectString(), "--session-timeout", "2s", "elect", "/lost"),
		sh(`trap 'echo TERM > `+termed+`; exit 0' TERM; echo ready; while :; do sleep 0.1; done`))...)
	z.expectLine(t, "ready")
	p.Blackhole()
	r := z.wait(t, 30*time.Second)
	assert.Equal(t, exitLost, r.code, r.stderr)
	b, _ := os.ReadFile(termed)
	assert.Equal(t, "TERM\n", string(b), "COMMAND did not get SIGTERM")
}

func TestElectSignalWhileWaitingLeavesQueue(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	holdMutex(t, newMutex(t, c, "/election", "holder"))
	p := start(t, args(connect, cmd("elect", "/election"), sh("echo ran"))...)
	waitChildren(t, c, "/election", 2)
	p.signal(t, syscall.SIGINT)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 128+int(syscall.SIGINT), r.code, r.stderr)
	assert.Empty(t, r.stdout)
	assert.Len(t, children(t, c, "/election"), 1)
}

func newMutex(t *testing.T, c *framework.Client, path, id string) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path, mutex.WithParticipantID(id))
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

func TestLeaderPrintsLeaderThenQueue(t *testing.T) {
	cl, connect := server(t)
	obs := client(t, cl)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	t.Run("mutex", func(t *testing.T) {
		holdMutex(t, newMutex(t, client(t, cl), "/m", "a"))
		waiting := make(chan error, 2)
		for _, id := range []string{"b", "c"} {
			m := newMutex(t, client(t, cl), "/m", id)
			go func() { _, err := m.Acquire(ctx); waiting <- err }()
			waitChildren(t, obs, "/m", map[string]int{"b": 2, "c": 3}[id])
		}
		r := zkr(t, args(connect, cmd("leader", "/m"))...)
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "a\nb\nc\n", r.stdout)
		cancel()
		for range 2 {
			<-waiting
		}
	})

	t.Run("latch", func(t *testing.T) {
		for _, id := range []string{"l1", "l2"} {
			l, err := leader.NewLatch(client(t, cl), "/latch", leader.WithParticipantID(id))
			require.NoError(t, err)
			require.NoError(t, l.Start(context.Background()))
			t.Cleanup(func() { l.Close() })
			waitChildren(t, obs, "/latch", map[string]int{"l1": 1, "l2": 2}[id])
		}
		r := zkr(t, args(connect, cmd("leader", "/latch"))...)
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "l1\nl2\n", r.stdout)
	})

	t.Run("selector", func(t *testing.T) {
		for _, id := range []string{"s1", "s2"} {
			s, err := leader.NewSelector(client(t, cl), "/selector", func(ctx context.Context, _ *hold.Hold) error {
				<-ctx.Done()
				return nil
			}, leader.WithParticipantID(id))
			require.NoError(t, err)
			require.NoError(t, s.Start(context.Background()))
			t.Cleanup(func() { s.Close() })
			waitChildren(t, obs, "/selector", map[string]int{"s1": 1, "s2": 2}[id])
		}
		r := zkr(t, args(connect, cmd("leader", "/selector"))...)
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "s1\ns2\n", r.stdout)
	})

	t.Run("nobody", func(t *testing.T) {
		r := zkr(t, args(connect, cmd("leader", "/nobody/here"))...)
		assert.Equal(t, exitNoLeader, r.code, r.stderr)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "nobody leads")
	})
}
