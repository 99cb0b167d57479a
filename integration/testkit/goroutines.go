package testkit

import (
	"bytes"
	"runtime"
	"testing"
	"time"
)

// idleWorkerFrame starts the first frame of the client's idle worker
// outside the runtime: a worker waiting for a task (it ends after a short
// idle time, so a count taken right after a burst would include it).
var idleWorkerFrame = []byte("github.com/zkrecipes/zkrecipes/framework.(*Client).work(")

// BusyGoroutines counts the goroutines running now, leaving out the
// clients' idle workers: what a component costs in goroutines, measured
// before and after it starts, without waiting for a burst's workers to end.
func BusyGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if !idle(g) {
			count++
		}
	}
	return count
}

// idle says whether the goroutine dump g is an idle worker's.
func idle(g []byte) bool {
	lines := bytes.Split(g, []byte("\n"))
	for _, l := range lines[1:] {
		if len(l) == 0 || l[0] == '\t' || bytes.HasPrefix(l, []byte("runtime.")) {
			continue
		}
		return bytes.HasPrefix(l, idleWorkerFrame)
	}
	return false
}

// GoroutinesSettled waits until at most limit goroutines more than before
// run (BusyGoroutines), within a deadline, and returns how many more do:
// a component's background work may take a moment to settle after its
// Start (its first reads' requests in flight end).
func GoroutinesSettled(t testing.TB, before, limit int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		added := BusyGoroutines() - before
		if added <= limit || time.Now().After(deadline) {
			return added
		}
		time.Sleep(20 * time.Millisecond)
	}
}
