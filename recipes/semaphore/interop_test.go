package semaphore_test

// Interop with the real Apache Curator 5.4 InterProcessSemaphoreV2 and
// SharedCount, driven through the Java Agent of internal/curator: Go and
// Java share one semaphore, and together never hold more leases than its
// maximum.

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
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

const agentSession = 10 * time.Second

func TestCuratorWaitsWhileGoHoldsEveryLease(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	s := newSem(t, newClient(t, cl.Addrs()), "/sem/interop", 2, semaphore.WithParticipantID("go-1"))
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	held, err := s.Acquire(ctxT(t, 10*time.Second), 2)
	require.NoError(t, err)
	java.Send("sem-acquire j /sem/interop 2 1")
	kids := waitNodes(t, obs, "/sem/interop/leases", 3) // Curator's node, waiting for room
	java.ExpectNone(t, "sem-acquired", absenceWindow)

	var javaNode string
	for _, k := range kids {
		if p := "/sem/interop/leases/" + k; p != held[0].Path() && p != held[1].Path() {
			javaNode = p
		}
	}
	assert.Regexp(t, leaseNode, framework.Base(javaNode), "Curator's lease node name")
	ids, err := s.Participants(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, []string{"go-1", "go-1", framework.DefaultParticipantID()}, ids,
		"Curator's leases carry its default node data, the host's address")

	require.NoError(t, held[1].Release())
	got := java.Expect(t, "sem-acquired j ", 10*time.Second)
	assert.Equal(t, "sem-acquired j "+javaNode, got, "Curator holds through the node it waited with")
	assert.Nil(t, held[0].Err())
	java.Call(t, "sem-release j", "sem-released j", 10*time.Second)
	require.NoError(t, held[0].Release())
	waitNodes(t, obs, "/sem/interop/leases", 0)
	waitNodes(t, obs, "/sem/interop/locks", 0)
}

func TestGoWaitsWhileCuratorHoldsEveryLease(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	s := newSem(t, newClient(t, cl.Addrs()), "/sem/interop", 2)
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	javaLeases := strings.Fields(java.Call(t, "sem-acquire j /sem/interop 2 2", "sem-acquired j ", 10*time.Second))[2:]
	require.Len(t, javaLeases, 2)
	for _, p := range javaLeases {
		assert.Equal(t, "/sem/interop/leases", framework.Parent(p), "Curator's layout")
		assert.Regexp(t, leaseNode, framework.Base(p))
	}
	waitNodes(t, obs, "/sem/interop/locks", 0) // Curator released its internal mutex

	_, err := s.TryAcquire(ctxT(t, 10*time.Second), 1)
	assert.ErrorIs(t, err, zkrecipes.ErrWouldBlock)
	got := acquireAsync(ctxT(t, 60*time.Second), s, 1)
	waitNodes(t, obs, "/sem/interop/leases", 3) // Go's node, waiting for room
	notGranted(t, got)

	java.Call(t, "sem-release j", "sem-released j", 10*time.Second)
	a := receive(t, got, 10*time.Second)
	require.NoError(t, a.err)
	assert.NotContains(t, javaLeases, a.leases[0].Path())
	assert.Equal(t, []string{framework.Base(a.leases[0].Path())}, nodes(t, obs, "/sem/interop/leases"))
	closeAll(t, a.leases)
	waitNodes(t, obs, "/sem/interop/leases", 0)
}

// The shared count's format is Curator's: a count Curator's SharedCount
// writes is followed by Go, and one Go writes is read by Curator.
func TestSharedCountIsSharedWithCurator(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	java.Call(t, "count-set /counts/interop 3", "count-set", 10*time.Second)
	s := newShared(t, c, "/sem/shared-interop", "/counts/interop")
	waitMax(t, s, 3)
	require.NoError(t, setCount(ctxT(t, 10*time.Second), c, "/counts/interop", 5))
	waitMax(t, s, 5)
	assert.Equal(t, "count /counts/interop 5", java.Call(t, "count-get /counts/interop", "count ", 10*time.Second))
}

// Three Go and three Curator processes share a semaphore of two leases. Each
// logs its leases to one O_APPEND file, one write per line, so the file is
// the true order of events: never more than two inside, nothing lost, and
// the two implementations took turns.
func TestGoAndCuratorShareOneSemaphore(t *testing.T) {
	const (
		path       = "/sem/shared"
		maxLeases  = 2
		perSide    = 3
		iterations = 10
		hold       = 50 * time.Millisecond // long enough for a second lease to be taken meanwhile, under load too
	)
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	logPath := filepath.Join(t.TempDir(), "leases.log")
	jvm := curator.Agent(t)

	// Start every JVM first (about a second each), so that the Java and Go
	// loops start together and really contend.
	agents := make([]*curator.Process, perSide)
	for i := range agents {
		agents[i] = jvm.Start(t, cl.ConnectString(), agentSession)
	}
	sems := make([]*semaphore.Semaphore, perSide)
	for i := range sems {
		sems[i] = newSem(t, newClient(t, cl.Addrs()), path, maxLeases, semaphore.WithParticipantID(fmt.Sprintf("go-%d", i)))
	}

	// A gate holds every lease until all six contenders have queued: one
	// waits for room holding the internal mutex, five queue for the mutex.
	gate := newSem(t, newClient(t, cl.Addrs()), path, maxLeases, semaphore.WithParticipantID("gate"))
	gated, err := gate.Acquire(ctxT(t, 10*time.Second), maxLeases)
	require.NoError(t, err)

	for i, a := range agents {
		a.Send(fmt.Sprintf("sem-loop %s %d %d %d %s java-%d", path, maxLeases, iterations, hold.Milliseconds(), logPath, i))
	}
	var wg sync.WaitGroup
	for i, s := range sems {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, goLoop(s, iterations, hold, logPath, fmt.Sprintf("go-%d", i)))
		}()
	}
	waitNodes(t, obs, path+"/locks", 2*perSide)
	waitNodes(t, obs, path+"/leases", maxLeases+1)
	closeAll(t, gated)
	wg.Wait()
	for i, a := range agents {
		a.Expect(t, fmt.Sprintf("loop-done java-%d", i), 2*time.Minute)
	}

	checkLeases(t, logPath, maxLeases, 2*perSide, iterations)
	waitNodes(t, obs, path+"/leases", 0)
}

// goLoop is a Go contender: iterations leases, each logged as
// "enter <id> <node>" and "exit <id> <node>", the way the Agent's sem-loop
// logs them.
func goLoop(s *semaphore.Semaphore, iterations int, hold time.Duration, logPath, id string) error {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for range iterations {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		leases, err := s.Acquire(ctx, 1)
		cancel()
		if err != nil {
			return err
		}
		node := framework.Base(leases[0].Path())
		_, err = f.WriteString("enter " + id + " " + node + "\n")
		time.Sleep(hold)
		if err == nil {
			_, err = f.WriteString("exit " + id + " " + node + "\n")
		}
		if cerr := leases[0].Release(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkLeases verifies the log: never more than maxLeases inside at once, every
// exit matches its enter, each contender has all its iterations, max was
// reached (the semaphore really let several in), and Go and Curator took
// turns ("go-*" and "java-*" ids).
func checkLeases(t *testing.T, logPath string, maxLeases, contenders, iterations int) {
	t.Helper()
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	inside := map[string]string{} // id -> lease node
	enters := map[string]int{}
	peak, switches, lastSide := 0, 0, ""
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines++
		w := strings.Fields(sc.Text())
		require.Len(t, w, 3, "line %d: %q", lines, sc.Text())
		id, node := w[1], w[2]
		require.Regexp(t, leaseNode, node, "line %d", lines)
		switch w[0] {
		case "enter":
			require.NotContains(t, inside, id, "line %d: %s entered twice", lines, id)
			inside[id] = node
			enters[id]++
			peak = max(peak, len(inside))
			require.LessOrEqual(t, len(inside), maxLeases, "line %d: inside at once: %v", lines, inside)
			if side := strings.SplitN(id, "-", 2)[0]; side != lastSide {
				if lastSide != "" {
					switches++
				}
				lastSide = side
			}
		case "exit":
			require.Equal(t, inside[id], node, "line %d: %s left a lease it did not hold", lines, id)
			delete(inside, id)
		default:
			t.Fatalf("line %d: %q", lines, sc.Text())
		}
	}
	assert.Empty(t, inside, "entered and never left")
	require.Len(t, enters, contenders, "contenders: %v", enters)
	for id, n := range enters {
		assert.Equal(t, iterations, n, "leases of %s", id)
	}
	assert.Equal(t, maxLeases, peak, "never more than one inside: the semaphore was a mutex")
	assert.GreaterOrEqual(t, switches, 2, "Go and Curator never took turns: nothing was contended")
}
