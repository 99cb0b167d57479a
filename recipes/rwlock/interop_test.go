package rwlock_test

// Interop with the real Apache Curator 5.4 InterProcessReadWriteLock, driven
// through the Java Agent of internal/curator: readers of both languages
// share, writers of either exclude everyone.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

const agentSession = 10 * time.Second

// absenceWindow: how long to watch for a grant that must not happen, taken
// only once the waiter has verifiably queued (its node exists), so a wrong
// grant would come within a round trip or two.
const absenceWindow = time.Second

func TestGoAndCuratorReadersShare(t *testing.T) {
	cl := zktest.Standalone(t)
	l := newRW(t, newClient(t, cl.Addrs()), "/rw/interop-share")
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	_, err := l.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	got := java.Call(t, "rw-acquire j /rw/interop-share read", "rw-acquired", 30*time.Second)
	assert.Regexp(t, readNode, framework.Base(strings.Fields(got)[3]), "Curator's read node name")
	java.Call(t, "rw-release j read", "rw-released", 10*time.Second)
	require.NoError(t, l.ReadLock().Release())
}

func TestWritersOfEitherLanguageExcludeEveryone(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := newClient(t, cl.Addrs())
	goSide := newRW(t, newClient(t, cl.Addrs()), "/rw/interop-x")
	java := curator.Agent(t).Start(t, cl.ConnectString(), agentSession)

	// A Go reader holds; Curator's writer queues and waits.
	_, err := goSide.ReadLock().Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	java.Send("rw-acquire jw /rw/interop-x write")
	waitNodes(t, obs, "/rw/interop-x", 2)
	java.ExpectNone(t, "rw-acquired", absenceWindow)
	require.NoError(t, goSide.ReadLock().Release())
	java.Expect(t, "rw-acquired jw write", 30*time.Second)

	// Curator's writer holds; a Go reader and a Go writer both wait.
	r := acquireAsync(newRW(t, newClient(t, cl.Addrs()), "/rw/interop-x").ReadLock())
	waitNodes(t, obs, "/rw/interop-x", 2) // the reader queues first
	w := acquireAsync(newRW(t, newClient(t, cl.Addrs()), "/rw/interop-x").WriteLock())
	waitNodes(t, obs, "/rw/interop-x", 3)
	r.blocked(t)
	w.blocked(t)
	java.Call(t, "rw-release jw write", "rw-released", 10*time.Second)
	r.granted(t) // queued before the Go writer
	w.blocked(t)
	r.done(t)
	w.granted(t)
	w.done(t)
}

// Two Go and two Curator loopers, readers and writers mixed, log every
// critical section to one file; replaying the log must never show a writer
// inside with anyone else.
func TestMixedLoopersKeepReadWriteExclusion(t *testing.T) {
	cl := zktest.Standalone(t)
	const iterations = 8
	logPath := filepath.Join(t.TempDir(), "sections.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer logf.Close()
	write := func(line string) { _, _ = logf.WriteString(line + "\n") } // one write per line

	agent := curator.Agent(t)
	var javas []*curator.Process
	for i, mode := range []string{"read", "write"} {
		j := agent.Start(t, cl.ConnectString(), agentSession)
		javas = append(javas, j)
		j.Send(fmt.Sprintf("rw-loop /rw/interop-mix %s %d 2 %s java-%d", mode, iterations, logPath, i))
	}
	var wg sync.WaitGroup
	for i, mode := range []string{"read", "write"} {
		l := newRW(t, newClient(t, cl.Addrs()), "/rw/interop-mix")
		wg.Add(1)
		go func() {
			defer wg.Done()
			lock := l.ReadLock().Acquire
			release := l.ReadLock().Release
			if mode == "write" {
				lock, release = l.WriteLock().Acquire, l.WriteLock().Release
			}
			for n := 0; n < iterations; n++ {
				h, err := lock(ctxT(t, 60*time.Second))
				if !assert.NoError(t, err) {
					return
				}
				name := framework.Base(h.Path())
				write(fmt.Sprintf("enter go-%d %s %s", i, mode, name))
				time.Sleep(2 * time.Millisecond) // hold briefly so others queue
				write(fmt.Sprintf("exit go-%d %s %s", i, mode, name))
				assert.NoError(t, release())
			}
		}()
	}
	wg.Wait()
	for i, j := range javas {
		j.Expect(t, fmt.Sprintf("loop-done java-%d", i), 120*time.Second)
	}

	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	readers, writers, sections := 0, 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		require.Len(t, fields, 4, "log line %q", sc.Text())
		delta := 1
		if fields[0] == "exit" {
			delta = -1
		} else {
			sections++
		}
		if fields[2] == "write" {
			writers += delta
		} else {
			readers += delta
		}
		require.LessOrEqual(t, writers, 1, "two writers inside at %q", sc.Text())
		if writers == 1 {
			require.Zero(t, readers, "a reader inside with a writer at %q", sc.Text())
		}
	}
	assert.Equal(t, 4*iterations, sections, "every critical section was logged")
}
