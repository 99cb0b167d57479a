package mutex_test

// Interop with the real Apache Curator 5.4 InterProcessMutex, driven through
// the Java Agent of internal/curator: Go and Java contenders share one lock
// path, and each side must see, respect and queue behind the other's nodes.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

const agentSession = 10 * time.Second

// absenceWindow is how long a test watches for a grant that must not happen.
// Absence cannot be proven by waiting for an event; the window is taken only
// after the waiter has verifiably queued (its node exists), so a wrong grant
// would come within a few round trips, far inside it.
const absenceWindow = time.Second

func TestCuratorWaitsWhileGoHolds(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	m := newMutex(t, newClient(t, cl.Addrs()), "/locks/interop", mutex.WithParticipantID("go-1"))
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	java.Send("mutex-acquire j /locks/interop")
	kids := waitNodes(t, obs, "/locks/interop", 2) // Curator has queued behind us
	java.ExpectNone(t, "acquired", absenceWindow)

	var javaNode string
	for _, k := range kids {
		if "/locks/interop/"+k != h.Path() {
			javaNode = "/locks/interop/" + k
		}
	}
	assert.Regexp(t, curatorNode, framework.Base(javaNode), "Curator's node name")
	// Both implementations order the queue alike: Go's holder first.
	ids, err := m.Participants(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Len(t, ids, 2)
	assert.Equal(t, "go-1", ids[0])
	assert.Equal(t, "participants go-1,"+ids[1],
		java.Call(t, "participants /locks/interop", "participants", 10*time.Second))

	require.NoError(t, m.Release())
	got := java.Expect(t, "acquired j ", 10*time.Second)
	assert.Equal(t, "acquired j "+javaNode, got, "Curator holds through the node it queued with")
	ids, err = m.Participants(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Len(t, ids, 1)
	assert.NotEqual(t, "go-1", ids[0])

	java.Call(t, "mutex-release j", "released j", 10*time.Second)
	waitNodes(t, obs, "/locks/interop", 0)
}

func TestGoWaitsWhileCuratorHolds(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	m := newMutex(t, newClient(t, cl.Addrs()), "/locks/interop", mutex.WithParticipantID("go-1"))
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	javaNode := strings.TrimPrefix(java.Call(t, "mutex-acquire j /locks/interop", "acquired j ", 10*time.Second), "acquired j ")
	assert.Regexp(t, curatorNode, framework.Base(javaNode), "Curator's node name")
	assert.Equal(t, "/locks/interop", framework.Parent(javaNode))

	got := acquireAsync(m, 60*time.Second)
	waitNodes(t, obs, "/locks/interop", 2) // Go has queued behind Curator

	// Both implementations see the same queue: Curator's holder, then Go.
	ids, err := m.Participants(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Len(t, ids, 2)
	javaID := ids[0]
	assert.NotEmpty(t, javaID, "Curator's default participant id (its host address)")
	assert.Equal(t, "go-1", ids[1])
	data, _, err := obs.Get(ctxT(t, 10*time.Second), javaNode)
	require.NoError(t, err)
	assert.Equal(t, javaID, string(data))
	assert.Equal(t, "participants "+javaID+",go-1",
		java.Call(t, "participants /locks/interop", "participants", 10*time.Second))
	assert.Equal(t, javaID, framework.DefaultParticipantID(), "both default to the address the hostname resolves to")

	// The Go waiter stays blocked while Curator holds (see absenceWindow).
	select {
	case g := <-got:
		t.Fatalf("Go granted while Curator holds: err=%v", g.err)
	case <-time.After(absenceWindow):
	}

	java.Call(t, "mutex-release j", "released j", 10*time.Second)
	var g granted
	select {
	case g = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("Go not granted after Curator released")
	}
	require.NoError(t, g.err)
	assert.NotEqual(t, javaNode, g.hold.Path())
	assert.Equal(t, []string{framework.Base(g.hold.Path())}, nodes(t, obs, "/locks/interop"))
	require.NoError(t, g.release())
	waitNodes(t, obs, "/locks/interop", 0)
}

// Three Go and three Curator processes take turns on one path. Each logs its
// critical sections to one O_APPEND file, one write per line, so the file is
// the true order of events: no overlap, nothing lost, strict FIFO by node
// sequence number across both implementations.
func TestGoAndCuratorContendersShareOneQueue(t *testing.T) {
	const (
		path       = "/locks/shared-queue"
		perSide    = 3
		iterations = 10
		hold       = 2 * time.Millisecond
	)
	cl := zktest.Standalone(t)
	logPath := filepath.Join(t.TempDir(), "sections.log")
	jvm := curator.Agent(t)

	// Start every JVM first (about a second each), so that the Java and Go
	// loops start together and really contend.
	agents := make([]*curator.Process, perSide)
	for i := range agents {
		agents[i] = jvm.Start(t, cl.ConnectString(), agentSession)
	}
	mutexes := make([]*mutex.Mutex, perSide)
	for i := range mutexes {
		mutexes[i] = newMutex(t, newClient(t, cl.Addrs()), path, mutex.WithParticipantID(fmt.Sprintf("go-%d", i)))
	}

	// A gate holds the lock until all six contenders have queued, so the
	// run starts with Go and Curator nodes interleaved in one queue, however
	// slowly the JVMs get going.
	obs := newClient(t, cl.Addrs())
	gate := newMutex(t, newClient(t, cl.Addrs()), path, mutex.WithParticipantID("gate"))
	_, err := gate.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	for i, a := range agents {
		a.Send(fmt.Sprintf("mutex-loop %s %d %d %s java-%d", path, iterations, hold.Milliseconds(), logPath, i))
	}
	var wg sync.WaitGroup
	for i, m := range mutexes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, goLoop(m, iterations, hold, logPath, fmt.Sprintf("go-%d", i)))
		}()
	}
	waitNodes(t, obs, path, 1+2*perSide)
	require.NoError(t, gate.Release())
	wg.Wait()
	for i, a := range agents {
		a.Expect(t, fmt.Sprintf("loop-done java-%d", i), 2*time.Minute)
	}

	checkSections(t, logPath, 2*perSide, iterations)
}

// goLoop is a Go contender: iterations critical sections, each logged as
// "enter <id> <node>" and "exit <id> <node>", the way the Agent's mutex-loop
// logs them.
func goLoop(m *mutex.Mutex, iterations int, hold time.Duration, logPath, id string) error {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for range iterations {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		h, err := m.Acquire(ctx)
		cancel()
		if err != nil {
			return err
		}
		node := framework.Base(h.Path())
		_, err = f.WriteString("enter " + id + " " + node + "\n")
		time.Sleep(hold)
		if err == nil {
			_, err = f.WriteString("exit " + id + " " + node + "\n")
		}
		if rerr := m.Release(); err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkSections verifies the log: every enter is directly followed by its own
// exit (no overlap), each contender has all its sections, lock node
// sequence numbers strictly increase (grants in queue order), and the two
// implementations took turns ("go-*" and "java-*" ids).
func checkSections(t *testing.T, logPath string, contenders, iterations int) {
	t.Helper()
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	require.Len(t, lines, 2*contenders*iterations, "every section logs two lines")

	perID := map[string]int{}
	var lastSeq, lastNode, lastSide string
	switches := 0 // changes between Go and Java sections in log order
	for i := 0; i+1 < len(lines); i += 2 {
		enter, exit := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		require.Len(t, enter, 3, "line %d: %q", i+1, lines[i])
		require.Len(t, exit, 3, "line %d: %q", i+2, lines[i+1])
		require.Equal(t, "enter", enter[0], "line %d: %q: an enter must follow the previous exit", i+1, lines[i])
		require.Equal(t, []string{"exit", enter[1], enter[2]}, exit,
			"line %d: %q: overlap, %q had not left", i+2, lines[i+1], lines[i])
		node := enter[2]
		require.Regexp(t, curatorNode, node, "line %d", i+1)
		seq := node[len(node)-10:]
		require.Greater(t, seq, lastSeq, "line %d: %s entered after %s: not FIFO", i+1, node, lastNode)
		lastSeq, lastNode = seq, node
		if side := strings.SplitN(enter[1], "-", 2)[0]; side != lastSide {
			if lastSide != "" {
				switches++
			}
			lastSide = side
		}
		perID[enter[1]]++
	}
	require.Len(t, perID, contenders, "contenders: %v", perID)
	assert.GreaterOrEqual(t, switches, 2, "Go and Curator sections never interleaved: nothing was contended")
	for id, n := range perID {
		assert.Equal(t, iterations, n, "sections of %s", id)
	}
}

// A Go holder with a lease time forgets its hold: Curator's waiter, queued
// behind it, is granted at the lease's end (by the node's deletion, which
// Curator watches), after the Go holder was told, and not before.
func TestCuratorWaiterIsGrantedAtAForgottenGoLeasesEnd(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	m := newMutex(t, newClient(t, cl.Addrs()), "/locks/interop-lease", mutex.WithLeaseTime(2*time.Second))
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	h, err := m.Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	end, _ := h.Expiry()
	java.Send("mutex-acquire j /locks/interop-lease")
	waitNodes(t, obs, "/locks/interop-lease", 2)
	java.ExpectNone(t, "acquired", time.Until(end)-200*time.Millisecond) // held until near its end

	java.Expect(t, "acquired j ", 10*time.Second)
	granted := time.Now()
	require.ErrorIs(t, h.Err(), zkrecipes.ErrLeaseExpired, "Curator was granted, and the Go holder was not told")
	assert.False(t, granted.Before(end), "granted at %v, before the lease's end %v", granted, end)
	java.Call(t, "mutex-release j", "released j", 10*time.Second)
	waitNodes(t, obs, "/locks/interop-lease", 0)
	assert.ErrorIs(t, m.Release(), zkrecipes.ErrLeaseExpired)
}
