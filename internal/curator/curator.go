// Package curator runs the real Apache Curator (Java) next to Go tests, so
// that interop tests can prove our recipes and Curator's share a lock path
// correctly: same node names, same queue order, mutual exclusion across the
// two implementations.
//
// Curator runs inside an Agent, a small Java program (java/Agent.java) that
// drives Curator's public API and speaks a line protocol on stdin/stdout:
// one command per line, one answer line per command (answers of blocking
// commands come when they complete, so several may be outstanding).
//
//	(on start)                              ready   (connected)
//	mutex-acquire <name> <path>             acquired <name> <lockNodePath>
//	mutex-release <name>                    released <name>
//	mutex-loop <path> <n> <holdMs> <logFile> <id>
//	                                        loop-done <id>
//	participants <path>                     participants <id1>,<id2>,...
//	mutex-bench <mode> <path> <x> <y>       mutex-bench peer=curator mode=<mode> ...
//	                                        (zkr-bench's line; see Agent.java)
//	latch-bench <path> <rounds>             latch-bench p50_us=<n> p99_us=<n>
//	sem-acquire <name> <path> <max> <qty>   sem-acquired <name> <leasePath>...
//	sem-release <name>                      sem-released <name>
//	sem-loop <path> <max> <n> <holdMs> <logFile> <id>
//	                                        loop-done <id>
//	smutex-acquire <name> <path>            smutex-acquired <name>
//	smutex-release <name>                   smutex-released <name>
//	count-set <path> <count>                count-set <path> <count>
//	count-get <path>                        count <path> <count>
//	rw-acquire <name> <path> read|write     rw-acquired <name> <mode> <nodePath>
//	rw-release <name> read|write            rw-released <name> <mode>
//	rw-loop <path> read|write <n> <holdMs> <logFile> <id>
//	                                        loop-done <id>
//	atomic-get long|int <path>              atomic <path> <value>
//	atomic-add long|int <path> <delta>      atomic-added <path> <succeeded> <pre> <post>
//	atomic-loop long|int <path> <n> <retries> <lockPath|-> <id>
//	                                        atomic-loop-done <id> <ok> <failed> <promoted>
//	shared-count-start <name> <path> <seed> shared-count-started <name> <count> <version>
//	                                        (then shared-count-changed <name> <count>
//	                                        on every change its listener hears)
//	shared-count-read <name>                shared-count-read <name> <count> <version>
//	shared-count-tryset <name> <count>      shared-count-tryset <name> true|false <count> <version>
//	shared-count-set <name> <count>         shared-count-set <name> <count>
//	shared-count-increment <name> <n>       shared-count-incremented <name> <n> <failedTries>
//	shared-value-start <name> <path> <hex>  shared-value-started <name> <hex> <version>
//	                                        (then shared-value-changed <name> <hex>)
//	shared-value-set <name> <hex>           shared-value-set <name> <hex>
//	shared-close <name>                     shared-closed <name>
//	barrier-set <path>                      barrier-set <path>
//	barrier-remove <path>                   barrier-removed <path>
//	barrier-wait <name> <path> <maxWaitMs>  barrier-waited <name> true|false
//	dbarrier-enter <name> <path> <memberQty> <maxWaitMs>
//	                                        dbarrier-entered <name> true|false
//	dbarrier-leave <name> <maxWaitMs>       dbarrier-left <name> true|false
//	node-create <path> persistent|ephemeral|protected-ephemeral-sequential <hex>
//	                                        node-created <actualPath>
//	node-set <path> <hex>                   node-set <path> <version>
//	node-delete <path>                      node-deleted <path>
//	disc-register <base> <name> <id> <address> <port> <payloadJsonHex>
//	                                        disc-registered <id>
//	disc-unregister <base> <name> <id>      disc-unregistered <id>
//	disc-query <base> <name>                disc-instances <name> <hex of a JSON array>
//	disc-provide <base> <name>              disc-provided <name> <id>|-
//	disc-typed-register <base> <name> <id> <payloadClass> <payloadJsonHex|->
//	                                        disc-typed-registered <id>
//	disc-typed-query <base> <name> <payloadClass>
//	                                        disc-typed-instances <name> <hex of a JSON array>
//	                                        or disc-typed-failed <name> <exception class>
//	group-join <path> <id> <payloadHex>     group-joined <id>
//	group-members <id>                      group-members <id> <id>=<hex>,...
//	group-leave <id>                        group-left <id>
//	watch-start curatorcache|treecache|servicecache <path>
//	                                        watch-started kind=<kind> init_ms=<n> threads=<n> heap=<bytes> nodes=<n>
//	watch-events <n> <pathsFile> <seed>     watch-events p50_us=<n> p99_us=<n> n=<n>
//	watch-close                             watch-closed
//	quit                                    bye   (then it exits 0)
//	(a failure)                             error <message>
//
// On EOF of stdin (the test process is gone) the Agent exits too. Error
// messages of per-name and loop commands start with the command and the
// name or id they concern.
//
// Commands on one name run on one Java thread of their own, in the order
// they arrive, because Curator's locks belong to the acquiring thread; a
// blocking acquire delays the name's later commands until it returns. One
// name stands for one recipe object on one path: the mutex
// (InterProcessMutex), the semaphore (InterProcessSemaphoreV2 with max
// leases; sem-release returns every lease the name holds), the semaphore
// mutex (InterProcessSemaphoreMutex) or the read-write lock
// (InterProcessReadWriteLock; rw-acquired names the node the name's thread
// holds that side through, from Curator's own getLockPath).
//
// The loops are independent contenders, each on a thread and recipe object
// of its own: mutex-loop logs "enter <id> <node>" and "exit <id> <node>"
// around each critical section, sem-loop the same with the lease's node
// name, rw-loop "enter <id> <mode> <node>" and "exit <id> <mode> <node>";
// one O_APPEND write per line, so several processes can share one log.
//
// The barrier commands drive DistributedBarrier (set, remove, a timed
// waitOnBarrier on name's thread) and DistributedDoubleBarrier: one name is
// one member (one node), whose timed enter and leave run on its thread and
// answer Curator's boolean (false: timed out).
//
// count-set and count-get use Curator's SharedCount (the count a
// semaphore's maximum can come from), made with the given seed if missing.
//
// The atomic commands use Curator's DistributedAtomicLong ("long") or
// DistributedAtomicInteger ("int"): atomic-add with RetryNTimes(10, 1ms);
// atomic-loop increments n times on a thread of its own with
// RetryNTimes(retries, 1ms), promoted (PromotedToLock, 30s timeout,
// RetryNTimes(100, 1ms)) to the mutex at lockPath unless it is "-", and
// counts the increments that said they succeeded, those that did not, and
// those that took the lock.
// The shared-* commands drive one started Curator SharedCount or
// SharedValue per name (recipes/shared). shared-count-tryset uses the
// versioned value the last shared-count-read took (Curator does not let a
// caller build one), so a test can make it stale on purpose;
// shared-count-increment is a compare-and-set loop of its own. Values are
// hex on the wire, "-" for empty.
//
// The disc-* commands drive curator-x-discovery's ServiceDiscovery (one
// started per base path, built with ServiceDiscoveryBuilder's defaults:
// Map payloads, JsonInstanceSerializer): disc-register registers a DYNAMIC
// instance whose payload is the JSON object given (a HashMap);
// disc-query answers queryForInstances as a JSON array of objects with id,
// address, port, sslPort, enabled, payload and payloadClass (the Java
// class the payload was read as), sorted by id; disc-provide asks a fresh
// ServiceProvider (round-robin) for an instance. The disc-typed-*
// commands do the same through a ServiceDiscovery of the payload class
// given (one per base path and class: java.lang.Object, java.util.Map,
// or zkrecipes.Detail, java/Detail.java, a class of one's own):
// disc-typed-register reads the payload's JSON as that class,
// disc-typed-query answers id, payload and payloadClass, or the class of
// the exception queryForInstances threw.
//
// The group-* commands drive Curator's GroupMember, one per member id:
// group-members answers its getCurrentMembers, sorted by id, payloads in
// hex ("-" when empty).
//
// The watch-* commands are make bench-watch's (java/WatchBench.java): one
// cache at a time, what it added to the JVM (threads, used heap after
// System.gc()) and the time to its initialized event, then the latency of
// events for writes to nodes picked from a file of paths.
//
// Commands for another recipe (leader latch...) take one register line in
// the Agent's constructor and a handler; a recipe object that must outlive
// one command, or stay on one thread, lives in the Agent's per-name Actor.
//
// The Agent needs javac/java (17+) and Debian's Curator 5.4 jars; without
// them the test fails with the install command, it is never skipped.
//
// It is this repository's own test driver, not library API: it sits under
// internal/ so that the recipes' interop tests can import it and nothing
// outside the module can, and it imports nothing of the module.
package curator

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is one running Agent JVM with its own Curator client (and so its
// own ZooKeeper session). Its methods are safe for concurrent use.
type Process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	stderr syncBuffer // written by exec's copier, read by failure reports

	mu      sync.Mutex
	lines   []string      // every line read from stdout
	next    int           // first line Expect has not consumed
	eof     error         // set when stdout ended (io.EOF or a read error)
	changed chan struct{} // closed and replaced whenever lines or eof change
	notes   []string      // failed writes, shown with the transcript

	exited  bool  // the process has been reaped
	exitErr error // what Wait said

	done     chan struct{} // closed once stdout ended and the process is reaped
	killOnce sync.Once
}

// Start launches an Agent connected to connectString with the given session
// timeout and waits for it to say "ready" (connected). The process is
// killed and waited for when t ends; if t failed, its stderr and everything
// it answered are logged.
func (j *JVM) Start(t testing.TB, connectString string, sessionTimeout time.Duration) *Process {
	t.Helper()
	return j.start(t, connectString, sessionTimeout, "", testJVM)
}

// StartMeasured is Start for an Agent that measures Curator rather than
// checks it: the production JIT (C2) and a heap of 1 GB, so that what it
// reports is what a deployed Curator application costs and takes, not a
// test JVM's.
func (j *JVM) StartMeasured(t testing.TB, connectString string, sessionTimeout time.Duration) *Process {
	t.Helper()
	return j.start(t, connectString, sessionTimeout, "", measuredJVM)
}

// testJVM is a small, quick-starting JVM: tests start several next to the
// ZooKeeper server, and the Agent's work is tiny.
var testJVM = []string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

// measuredJVM is a JVM as deployed, but for the serial collector, whose
// System.gc() is a full collection, so the used heap after it is what is
// live.
var measuredJVM = []string{"-Xmx1g", "-XX:+UseSerialGC"}

// StartWithDigest is Start for an Agent whose Curator authenticates with
// digest credentials user:password and gives the nodes it creates to them
// (ZooDefs.Ids.CREATOR_ALL_ACL), as framework.CreatorACL does.
func (j *JVM) StartWithDigest(t testing.TB, connectString string, sessionTimeout time.Duration, userPassword string) *Process {
	t.Helper()
	return j.start(t, connectString, sessionTimeout, userPassword, testJVM)
}

func (j *JVM) start(t testing.TB, connectString string, sessionTimeout time.Duration, digest string, jvm []string) *Process {
	t.Helper()
	args := append(append([]string(nil), jvm...), ownerProperty+strconv.Itoa(os.Getpid()))
	args = append(args, logProps...)
	args = append(args, "-cp", j.classpath, "zkrecipes.Agent",
		connectString, strconv.FormatInt(sessionTimeout.Milliseconds(), 10))
	cmd := exec.Command(j.java, args...)
	if digest != "" {
		cmd.Env = append(os.Environ(), "ZKRECIPES_AGENT_DIGEST="+digest)
	}
	p := &Process{cmd: cmd, changed: make(chan struct{}), done: make(chan struct{})}
	cmd.Stderr = &p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("curator: stdin pipe: %v", err)
	}
	p.stdin = stdin
	// Our own pipe rather than StdoutPipe: exec.Cmd.Wait closes a StdoutPipe
	// under a reader still using it, while with our own the reader simply
	// sees EOF once the process is gone and can call Wait itself.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("curator: stdout pipe: %v", err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		t.Fatalf("curator: start agent: %v", err)
	}
	w.Close() // the child has its copy; EOF comes when it exits
	go p.run(r)
	t.Cleanup(func() {
		p.Kill()
		<-p.done // the process is reaped and no goroutine of ours is left
		if t.Failed() {
			t.Logf("curator: agent pid %d (%s), %s\n%s\n--- stderr ---\n%s",
				p.Pid(), connectString, p.exitState(), p.transcript(), tail(&p.stderr, 100))
		}
	})
	p.Expect(t, "ready", 2*time.Minute) // the Agent itself gives up after 60s
	return p
}

// run collects stdout lines until EOF, then reaps the process. It never
// blocks on a consumer, so it always ends once the process has exited.
func (p *Process) run(r *os.File) {
	defer close(p.done)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		p.mu.Lock()
		if line != "" {
			p.lines = append(p.lines, strings.TrimRight(line, "\r\n"))
		}
		if err != nil {
			p.eof = err
		}
		p.broadcast()
		p.mu.Unlock()
		if err != nil {
			break
		}
	}
	r.Close()
	err := p.cmd.Wait()
	p.mu.Lock()
	p.exitErr, p.exited = err, true
	p.broadcast()
	p.mu.Unlock()
}

// broadcast wakes every waiter; p.mu must be held.
func (p *Process) broadcast() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Pid is the JVM's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Send writes one command line. It does not fail the test itself (it may be
// called from any goroutine, and writing to a killed Agent is expected in
// fault tests): a write error is recorded and shows in the failure of the
// next Expect, which then also sees EOF.
func (p *Process) Send(cmd string) {
	if strings.ContainsAny(cmd, "\r\n") {
		panic(fmt.Sprintf("curator: Send(%q): a command is one line", cmd))
	}
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		p.mu.Lock()
		p.notes = append(p.notes, fmt.Sprintf("send %q: %v", cmd, err))
		p.mu.Unlock()
	}
}

// Call sends cmd and returns the first answer starting with prefix (Send,
// then Expect).
func (p *Process) Call(t testing.TB, cmd, prefix string, timeout time.Duration) string {
	t.Helper()
	p.Send(cmd)
	return p.Expect(t, prefix, timeout)
}

// Expect reads lines until one starts with prefix and returns it; the lines
// before it are consumed too (they stay in the transcript). It fails the test
// on timeout, on EOF, and on an "error" line (unless prefix asks for one),
// showing everything the Agent answered so far. Call it from the test's
// goroutine.
func (p *Process) Expect(t testing.TB, prefix string, timeout time.Duration) string {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		p.mu.Lock()
		for p.next < len(p.lines) {
			line := p.lines[p.next]
			p.next++
			if strings.HasPrefix(line, prefix) {
				p.mu.Unlock()
				return line
			}
			if strings.HasPrefix(line, "error") && !strings.HasPrefix(prefix, "error") {
				p.mu.Unlock()
				t.Fatalf("curator: agent %d answered %q while %q was expected\n%s", p.Pid(), line, prefix, p.transcript())
			}
		}
		eof, changed := p.eof, p.changed
		p.mu.Unlock()
		if eof != nil {
			select { // let it be reaped, for the exit status and all of stderr
			case <-p.done:
			case <-time.After(5 * time.Second):
			}
			t.Fatalf("curator: agent %d: stdout ended (%v; %s) while %q was expected (its stderr follows at cleanup)\n%s",
				p.Pid(), eof, p.exitState(), prefix, p.transcript())
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("curator: agent %d: no line starting with %q within %v\n%s", p.Pid(), prefix, timeout, p.transcript())
		}
	}
}

// ExpectNone fails the test if a line starting with prefix (or an error line)
// arrives within d. It consumes nothing, so a later Expect still sees every
// line. Proving that something does not happen takes a bounded wait, so d is
// a trade-off between test time and the chance to catch a late event.
func (p *Process) ExpectNone(t testing.TB, prefix string, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	seen := -1
	for {
		p.mu.Lock()
		start := max(seen, p.next)
		for i := start; i < len(p.lines); i++ {
			if line := p.lines[i]; strings.HasPrefix(line, prefix) || strings.HasPrefix(line, "error") {
				p.mu.Unlock()
				t.Fatalf("curator: agent %d answered %q, expected no %q for %v\n%s", p.Pid(), line, prefix, d, p.transcript())
			}
		}
		seen = len(p.lines)
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return
		}
	}
}

// Kill sends SIGKILL: the JVM dies without closing its session, as a crashed
// process would, so its ephemeral nodes stay until the session expires.
// Cleanup still waits for it. Killing twice is harmless.
func (p *Process) Kill() {
	p.killOnce.Do(func() { _ = p.cmd.Process.Signal(syscall.SIGKILL) })
}

// exitState describes how the process ended, if it has.
func (p *Process) exitState() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !p.exited:
		return "still running"
	case p.exitErr == nil:
		return "exited 0"
	}
	return p.exitErr.Error()
}

// transcript is what the Agent answered, with a marker at the read position.
func (p *Process) transcript() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	b.WriteString("--- agent answers (> = not yet consumed) ---\n")
	for i, l := range p.lines {
		mark := "  "
		if i >= p.next {
			mark = "> "
		}
		b.WriteString(mark + l + "\n")
	}
	for _, n := range p.notes {
		b.WriteString("!! " + n + "\n")
	}
	return b.String()
}

// tail returns the last n lines of b.
func tail(b *syncBuffer, n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// syncBuffer is a bytes.Buffer that exec's copier writes while a failure
// report reads it. It is this package's own, not the test kit's, so that
// the driver imports nothing of the module: it sits under internal/, where
// the recipes' interop tests can reach it, and nothing there may import up.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
