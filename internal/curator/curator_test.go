package curator_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Leaked reader goroutines would show here: zktest.Main runs goleak.
func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

// The protocol itself: answers, errors, reentrancy on one name, quit.
func TestAgentProtocol(t *testing.T) {
	cl := zktest.Standalone(t)
	p := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)

	if got := p.Call(t, "participants /none", "participants", 10*time.Second); got != "participants" {
		t.Fatalf("empty lock directory: %q", got)
	}
	if got := p.Call(t, "no-such-command x", "error", 10*time.Second); !strings.Contains(got, "unknown command") {
		t.Fatalf("unknown command: %q", got)
	}
	if got := p.Call(t, "mutex-acquire a", "error", 10*time.Second); !strings.Contains(got, "usage") {
		t.Fatalf("wrong arity: %q", got)
	}
	if got := p.Call(t, "mutex-release nobody", "error", 10*time.Second); !strings.Contains(got, "mutex-release nobody") {
		t.Fatalf("release without acquire: %q", got)
	}

	first := p.Call(t, "mutex-acquire a /locks/p", "acquired a ", 10*time.Second)
	// Curator's mutex is reentrant per thread: the same name acquires again
	// at once, on the same node.
	if again := p.Call(t, "mutex-acquire a /locks/p", "acquired a ", 10*time.Second); again != first {
		t.Fatalf("reentrant acquire: %q, then %q", first, again)
	}
	if got := p.Call(t, "mutex-acquire a /locks/other", "error", 10*time.Second); !strings.Contains(got, "mutex-acquire a") {
		t.Fatalf("one name, two paths: %q", got)
	}
	p.Call(t, "mutex-release a", "released a", 10*time.Second)
	p.Call(t, "mutex-release a", "released a", 10*time.Second)
	p.Call(t, "quit", "bye", 10*time.Second)
}

// A killed Agent makes Expect fail rather than hang; Cleanup still reaps it.
func TestKilledAgentEndsItsOutput(t *testing.T) {
	cl := zktest.Standalone(t)
	p := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	p.Kill()
	p.Send("participants /x") // a write to a dead process is recorded, not fatal
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		p.Expect(ft, "participants", 30*time.Second)
	}()
	<-done
	if !strings.Contains(ft.msg, "stdout ended") {
		t.Fatalf("Expect after Kill: %q", ft.msg)
	}
}

// fatalRecorder records Fatalf instead of failing the real test; it panics
// to stop the caller as FailNow would.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = strings.TrimSpace(fmt.Sprintf(format, args...))
	panic(f)
}

// observer is a plain client for looking at the nodes the Agent makes.
func observer(t *testing.T, cl *zktest.Cluster) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, cl.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitChildren waits until dir has n children and returns them.
func waitChildren(t *testing.T, c *framework.Client, dir string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		kids, _, err := c.Children(context.Background(), dir)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		if len(kids) == n {
			return kids
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d children of %s, have %v", n, dir, kids)
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
}

// absenceWindow is how long a test watches for an answer that must not come.
// It is taken only after the blocked command has verifiably queued (its node
// exists), so a wrong grant would come within a few round trips.
const absenceWindow = time.Second

const uuidRE = `_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-`

func mustMatch(t *testing.T, re, s string) {
	t.Helper()
	if !regexp.MustCompile(re).MatchString(s) {
		t.Fatalf("%q does not match %s", s, re)
	}
}

func TestAgentSemaphore(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := observer(t, cl)
	p := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)

	got := strings.Fields(p.Call(t, "sem-acquire a /sem 2 2", "sem-acquired a ", 10*time.Second))
	if len(got) != 4 {
		t.Fatalf("two leases asked: %q", got)
	}
	for _, lease := range got[2:] {
		mustMatch(t, `^/sem/leases/`+uuidRE+`lease-\d{10}$`, lease)
	}
	waitChildren(t, obs, "/sem/leases", 2)

	if e := p.Call(t, "sem-acquire a /sem 3 1", "error", 10*time.Second); !strings.Contains(e, "sem-acquire a") {
		t.Fatalf("one name, two maximums: %q", e)
	}
	p.Send("sem-acquire b /sem 2 1")
	waitChildren(t, obs, "/sem/leases", 3) // b's node, waiting for room
	p.ExpectNone(t, "sem-acquired b", absenceWindow)

	p.Call(t, "sem-release a", "sem-released a", 10*time.Second)
	b := strings.Fields(p.Expect(t, "sem-acquired b ", 10*time.Second))
	kids := waitChildren(t, obs, "/sem/leases", 1)
	if len(b) != 3 || b[2] != "/sem/leases/"+kids[0] {
		t.Fatalf("b's lease %q, leases %v", b, kids)
	}
	p.Call(t, "sem-release b", "sem-released b", 10*time.Second)
	waitChildren(t, obs, "/sem/leases", 0)
	if e := p.Call(t, "sem-release b", "error", 10*time.Second); !strings.Contains(e, "sem-release b") {
		t.Fatalf("release with no lease: %q", e)
	}
}

func TestAgentSemaphoreMutexAndSharedCount(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := observer(t, cl)
	p := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)

	p.Call(t, "smutex-acquire a /smutex", "smutex-acquired a", 10*time.Second)
	p.Send("smutex-acquire b /smutex")
	waitChildren(t, obs, "/smutex/leases", 2) // a semaphore of one: b waits for room
	p.ExpectNone(t, "smutex-acquired b", absenceWindow)
	p.Call(t, "smutex-release a", "smutex-released a", 10*time.Second)
	p.Expect(t, "smutex-acquired b", 10*time.Second)
	p.Call(t, "smutex-release b", "smutex-released b", 10*time.Second)
	waitChildren(t, obs, "/smutex/leases", 0)

	if got := p.Call(t, "count-set /counts/c 258", "count-set", 10*time.Second); got != "count-set /counts/c 258" {
		t.Fatalf("count-set: %q", got)
	}
	data, _, err := obs.Get(context.Background(), "/counts/c")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, []byte{0, 0, 1, 2}) {
		t.Fatalf("SharedCount's bytes: %v", data)
	}
	if got := p.Call(t, "count-get /counts/c", "count ", 10*time.Second); got != "count /counts/c 258" {
		t.Fatalf("count-get: %q", got)
	}
}

func TestAgentReadWriteLock(t *testing.T) {
	cl := zktest.Standalone(t)
	obs := observer(t, cl)
	p := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	readNode := `^/rw/` + uuidRE + `__READ__\d{10}$`
	writeNode := `^/rw/` + uuidRE + `__WRIT__\d{10}$`

	r1 := strings.Fields(p.Call(t, "rw-acquire r1 /rw read", "rw-acquired r1 ", 10*time.Second))
	r2 := strings.Fields(p.Call(t, "rw-acquire r2 /rw read", "rw-acquired r2 ", 10*time.Second))
	if len(r1) != 4 || len(r2) != 4 || r1[2] != "read" || r1[3] == r2[3] {
		t.Fatalf("readers share the lock, each through its node: %q, %q", r1, r2)
	}
	mustMatch(t, readNode, r1[3])
	mustMatch(t, readNode, r2[3])

	p.Send("rw-acquire w /rw write")
	kids := waitChildren(t, obs, "/rw", 3) // the writer queued behind the readers
	p.ExpectNone(t, "rw-acquired w", absenceWindow)
	p.Call(t, "rw-release r1 read", "rw-released r1 read", 10*time.Second)
	p.ExpectNone(t, "rw-acquired w", absenceWindow/2) // one reader still holds
	p.Call(t, "rw-release r2 read", "rw-released r2 read", 10*time.Second)
	w := strings.Fields(p.Expect(t, "rw-acquired w ", 10*time.Second))
	if len(w) != 4 || w[2] != "write" {
		t.Fatalf("writer: %q", w)
	}
	mustMatch(t, writeNode, w[3])
	found := false
	for _, k := range kids {
		found = found || "/rw/"+k == w[3]
	}
	if !found {
		t.Fatalf("the writer holds through %s, not the node it queued with (%v)", w[3], kids)
	}

	// Holding the write lock, the same thread may take the read lock too
	// (Curator's downgrade path): it is granted at once, through a read node.
	r := strings.Fields(p.Call(t, "rw-acquire w /rw read", "rw-acquired w ", 10*time.Second))
	mustMatch(t, readNode, r[3])
	p.Call(t, "rw-release w read", "rw-released w read", 10*time.Second)
	p.Call(t, "rw-release w write", "rw-released w write", 10*time.Second)
	waitChildren(t, obs, "/rw", 0)

	if e := p.Call(t, "rw-acquire x /rw sideways", "error", 10*time.Second); !strings.Contains(e, "rw-acquire x") {
		t.Fatalf("bad mode: %q", e)
	}
}

// section is one "enter"/"exit" line of a loop log.
type section struct {
	enter bool
	id    string
	mode  string // "" for mutex and semaphore loops
	node  string
}

func readLog(t *testing.T, path string) []section {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []section
	for sc := bufio.NewScanner(f); sc.Scan(); {
		w := strings.Fields(sc.Text())
		var s section
		switch len(w) {
		case 3:
			s = section{enter: w[0] == "enter", id: w[1], node: w[2]}
		case 4:
			s = section{enter: w[0] == "enter", id: w[1], mode: w[2], node: w[3]}
		default:
			t.Fatalf("log line %q", sc.Text())
		}
		if w[0] != "enter" && w[0] != "exit" {
			t.Fatalf("log line %q", sc.Text())
		}
		out = append(out, s)
	}
	return out
}

func TestAgentSemaphoreLoopsNeverExceedMax(t *testing.T) {
	cl := zktest.Standalone(t)
	p := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	logPath := filepath.Join(t.TempDir(), "sem.log")
	const loops, iterations, maxLeases = 3, 10, 2
	for i := range loops {
		p.Send(fmt.Sprintf("sem-loop /sem-loop %d %d 5 %s j%d", maxLeases, iterations, logPath, i))
	}
	for range loops {
		p.Expect(t, "loop-done j", 2*time.Minute)
	}
	inside, peak := map[string]string{}, 0
	enters := map[string]int{}
	for _, s := range readLog(t, logPath) {
		if s.enter {
			if _, dup := inside[s.id]; dup {
				t.Fatalf("%s entered twice", s.id)
			}
			inside[s.id] = s.node
			enters[s.id]++
			peak = max(peak, len(inside))
			if len(inside) > maxLeases {
				t.Fatalf("%d inside at once: %v", len(inside), inside)
			}
			mustMatch(t, `^`+uuidRE+`lease-\d{10}$`, s.node)
		} else {
			if inside[s.id] != s.node {
				t.Fatalf("%s left %s, entered %s", s.id, s.node, inside[s.id])
			}
			delete(inside, s.id)
		}
	}
	if len(enters) != loops {
		t.Fatalf("loops that ran: %v", enters)
	}
	for id, n := range enters {
		if n != iterations {
			t.Fatalf("%s: %d sections", id, n)
		}
	}
	t.Logf("at most %d of %d inside at once", peak, maxLeases)
}

func TestAgentReadWriteLoopsExcludeWriters(t *testing.T) {
	cl := zktest.Standalone(t)
	p := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	logPath := filepath.Join(t.TempDir(), "rw.log")
	const iterations = 8
	ids := map[string]string{"r0": "read", "r1": "read", "w0": "write", "w1": "write"}
	for id, mode := range ids {
		p.Send(fmt.Sprintf("rw-loop /rw-loop %s %d 5 %s %s", mode, iterations, logPath, id))
	}
	for range ids {
		p.Expect(t, "loop-done ", 2*time.Minute)
	}
	readers, writers := map[string]bool{}, map[string]bool{}
	enters := map[string]int{}
	for _, s := range readLog(t, logPath) {
		if s.mode != ids[s.id] {
			t.Fatalf("%s logged mode %q", s.id, s.mode)
		}
		side := readers
		if s.mode == "write" {
			side = writers
			mustMatch(t, `^`+uuidRE+`__WRIT__\d{10}$`, s.node)
		} else {
			mustMatch(t, `^`+uuidRE+`__READ__\d{10}$`, s.node)
		}
		if !s.enter {
			delete(side, s.id)
			continue
		}
		enters[s.id]++
		if len(writers) > 0 || (s.mode == "write" && len(readers) > 0) {
			t.Fatalf("%s entered (%s) with writers %v and readers %v inside", s.id, s.mode, writers, readers)
		}
		side[s.id] = true
	}
	for id := range ids {
		if enters[id] != iterations {
			t.Fatalf("%s: %d sections", id, enters[id])
		}
	}
}
