package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// lsView is zkr ls -o json's object.
type lsView struct {
	Path    string    `json:"path"`
	Kind    string    `json:"kind"`
	Time    time.Time `json:"time"`
	Holding int       `json:"holding"`
	Waiting int       `json:"waiting"`
	Queue   []lsNode  `json:"queue"`
}

type lsNode struct {
	Pos     int       `json:"pos"`
	Role    string    `json:"role"`
	Side    string    `json:"side"`
	ID      string    `json:"id"`
	Session string    `json:"session"`
	Token   *int64    `json:"token"`
	Created time.Time `json:"created"`
	ForMS   *int64    `json:"for_ms"`
	Node    string    `json:"node"`
}

// lsJSON runs zkr ls -o json PATH and decodes its one line.
func lsJSON(t *testing.T, connect []string, path string) lsView {
	t.Helper()
	r := zkr(t, args(connect, cmd("ls", "-o", "json", path))...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 1, strings.Count(r.stdout, "\n"), "one line: %q", r.stdout)
	var v lsView
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
	for _, n := range v.Queue {
		require.NotNil(t, n.ForMS, "for_ms missing: %s", r.stdout)
	}
	return v
}

// inBackground runs acquire (a waiter) until the test ends: then its
// context is cancelled and the test waits for it to return.
func inBackground(t *testing.T, acquire func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = acquire(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func session(c *framework.Client) string { return fmt.Sprintf("0x%x", c.Session().ID) }

// row finds the table's line for participant id and splits it into its
// columns.
func row(t *testing.T, table, id string) []string {
	t.Helper()
	for _, l := range lines(table) {
		if f := strings.Fields(l); len(f) > 3 && strings.Contains(l, " "+id+" ") {
			return f
		}
	}
	t.Fatalf("no row for %s in:\n%s", id, table)
	return nil
}

// A mutex's queue, holder first: who, which session, the fencing token,
// and how long, as a table and as JSON. The path is zkr lock's and
// Curator's InterProcessMutex's alike.
func TestLsShowsAMutexQueueHolderFirst(t *testing.T) {
	cl, connect := server(t)
	alice, bob := client(t, cl), client(t, cl)
	t0 := time.Now()
	ma, err := mutex.New(alice, "/q/job", mutex.WithParticipantID("alice"))
	require.NoError(t, err)
	t.Cleanup(func() { ma.Close() })
	h, err := ma.Acquire(context.Background())
	require.NoError(t, err)
	mb, err := mutex.New(bob, "/q/job", mutex.WithParticipantID("bob"))
	require.NoError(t, err)
	t.Cleanup(func() { mb.Close() })
	inBackground(t, func(ctx context.Context) error { _, err := mb.Acquire(ctx); return err })
	waitChildren(t, alice, "/q/job", 2)

	r := zkr(t, args(connect, cmd("ls", "/q/job"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^/q/job: lock, 1 holding, 1 waiting\n`, r.stdout)
	assert.Regexp(t, `\nPOS +ROLE +ID +SESSION +TOKEN +FOR\n`, r.stdout)
	a := row(t, r.stdout, "alice")
	assert.Equal(t, []string{"1", "holds", "alice", session(alice), fmt.Sprint(h.Token())}, a[:5])
	assert.Regexp(t, `^\d+s$`, a[5])
	b := row(t, r.stdout, "bob")
	assert.Equal(t, []string{"2", "waits", "bob", session(bob), "-"}, b[:5])

	v := lsJSON(t, connect, "/q/job")
	assert.Equal(t, "/q/job", v.Path)
	assert.WithinDuration(t, time.Now(), v.Time, 5*time.Second, "when zkr looked")
	assert.Equal(t, "lock", v.Kind)
	assert.Equal(t, 1, v.Holding)
	assert.Equal(t, 1, v.Waiting)
	require.Len(t, v.Queue, 2)
	assert.Equal(t, 1, v.Queue[0].Pos)
	assert.Equal(t, "holds", v.Queue[0].Role)
	assert.Equal(t, "alice", v.Queue[0].ID)
	assert.Equal(t, session(alice), v.Queue[0].Session)
	assert.Equal(t, h.Token(), *v.Queue[0].Token)
	assert.Equal(t, strings.TrimPrefix(h.Path(), "/q/job/"), v.Queue[0].Node)
	assert.WithinDuration(t, t0, v.Queue[0].Created, 2*time.Second)
	assert.LessOrEqual(t, *v.Queue[0].ForMS, time.Since(t0).Milliseconds()+1000, "held longer than the test has run")
	assert.Equal(t, []any{2, "waits", "bob", session(bob)}, []any{v.Queue[1].Pos, v.Queue[1].Role, v.Queue[1].ID, v.Queue[1].Session})
	assert.Nil(t, v.Queue[1].Token, "a waiter holds nothing: no token")
}

// TOKEN is a hold's fencing token: a holder's alone. A waiter holds
// nothing, and shows - (null in JSON), as a semaphore's acquirer without
// a lease node did; zkr ls showed its node's czxid, which a script could
// take for a token in force.
func TestLsShowsATokenForHoldersOnly(t *testing.T) {
	cl, connect := server(t)
	c1, c2, c3 := client(t, cl), client(t, cl), client(t, cl)
	lock := func(c *framework.Client, id string) *rwlock.RWLock {
		l, err := rwlock.New(c, "/tokens/rw", rwlock.WithParticipantID(id))
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		return l
	}
	h, err := lock(c1, "reader").ReadLock().Acquire(context.Background())
	require.NoError(t, err)
	w := lock(c2, "writer")
	inBackground(t, func(ctx context.Context) error { _, err := w.WriteLock().Acquire(ctx); return err })
	waitChildren(t, c1, "/tokens/rw", 2)
	late := lock(c3, "late-reader")
	inBackground(t, func(ctx context.Context) error { _, err := late.ReadLock().Acquire(ctx); return err })
	waitChildren(t, c1, "/tokens/rw", 3)

	r := zkr(t, args(connect, cmd("ls", "/tokens/rw"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, fmt.Sprint(h.Token()), row(t, r.stdout, "reader")[5])
	assert.Equal(t, "-", row(t, r.stdout, "writer")[5])
	assert.Equal(t, "-", row(t, r.stdout, "late-reader")[5])

	v := lsJSON(t, connect, "/tokens/rw")
	require.Len(t, v.Queue, 3)
	require.NotNil(t, v.Queue[0].Token)
	assert.Equal(t, h.Token(), *v.Queue[0].Token)
	assert.Nil(t, v.Queue[1].Token, "the waiting writer")
	assert.Nil(t, v.Queue[2].Token, "the reader behind it")
}

// A read-write lock: readers before the first writer hold, the writer and
// everyone after it wait, and the table says which side each is on.
func TestLsShowsReadersAndWritersOfARWLock(t *testing.T) {
	cl, connect := server(t)
	c1, c2, c3 := client(t, cl), client(t, cl), client(t, cl)
	lock := func(c *framework.Client, id string) *rwlock.RWLock {
		l, err := rwlock.New(c, "/q/rw", rwlock.WithParticipantID(id))
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		return l
	}
	_, err := lock(c1, "reader-1").ReadLock().Acquire(context.Background())
	require.NoError(t, err)
	w := lock(c2, "writer")
	inBackground(t, func(ctx context.Context) error { _, err := w.WriteLock().Acquire(ctx); return err })
	waitChildren(t, c1, "/q/rw", 2)
	r2 := lock(c3, "reader-2")
	inBackground(t, func(ctx context.Context) error { _, err := r2.ReadLock().Acquire(ctx); return err })
	waitChildren(t, c1, "/q/rw", 3)

	r := zkr(t, args(connect, cmd("ls", "/q/rw"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^/q/rw: rwlock, 1 holding, 2 waiting\n`, r.stdout)
	assert.Equal(t, []string{"1", "holds", "read", "reader-1"}, row(t, r.stdout, "reader-1")[:4])
	assert.Equal(t, []string{"2", "waits", "write", "writer"}, row(t, r.stdout, "writer")[:4])
	assert.Equal(t, []string{"3", "waits", "read", "reader-2"}, row(t, r.stdout, "reader-2")[:4])

	v := lsJSON(t, connect, "/q/rw")
	assert.Equal(t, "rwlock", v.Kind)
	require.Len(t, v.Queue, 3)
	for i, want := range [][3]string{{"holds", "read", "reader-1"}, {"waits", "write", "writer"}, {"waits", "read", "reader-2"}} {
		assert.Equal(t, want, [3]string{v.Queue[i].Role, v.Queue[i].Side, v.Queue[i].ID})
	}
}

// A semaphore: the leases held, the acquirer waiting for room (it holds
// the internal lock, and its lease node is made), and the one queued
// behind it on the internal lock, which has no lease node yet, so no
// token.
func TestLsShowsWhichLeasesOfASemaphoreAreHeld(t *testing.T) {
	cl, connect := server(t)
	cs := []*framework.Client{client(t, cl), client(t, cl), client(t, cl), client(t, cl)}
	sems := make([]*semaphore.Semaphore, len(cs))
	for i, c := range cs {
		s, err := semaphore.New(c, "/q/sem", 2, semaphore.WithParticipantID(fmt.Sprintf("p%d", i)))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		sems[i] = s
	}
	var held []*hold.Hold
	for _, s := range sems[:2] {
		l, err := s.Acquire(context.Background(), 1)
		require.NoError(t, err)
		held = append(held, l...)
	}
	inBackground(t, func(ctx context.Context) error { _, err := sems[2].Acquire(ctx, 1); return err })
	waitChildren(t, cs[0], "/q/sem/leases", 3)
	inBackground(t, func(ctx context.Context) error { _, err := sems[3].Acquire(ctx, 1); return err })
	waitChildren(t, cs[0], "/q/sem/locks", 2)

	r := zkr(t, args(connect, cmd("ls", "/q/sem"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^/q/sem: semaphore, 2 holding, 2 waiting\n`, r.stdout)
	assert.Equal(t, []string{"1", "holds", "lease", "p0", session(cs[0]), fmt.Sprint(held[0].Token())}, row(t, r.stdout, "p0")[:6])
	assert.Equal(t, []string{"2", "holds", "lease", "p1"}, row(t, r.stdout, "p1")[:4])
	assert.Equal(t, []string{"3", "waits", "lease", "p2", session(cs[2]), "-"}, row(t, r.stdout, "p2")[:6])
	p3 := row(t, r.stdout, "p3")
	assert.Equal(t, []string{"4", "waits", "lease", "p3", session(cs[3]), "-"}, p3[:6])

	v := lsJSON(t, connect, "/q/sem")
	assert.Equal(t, "semaphore", v.Kind)
	require.Len(t, v.Queue, 4)
	assert.Regexp(t, `^leases/`, v.Queue[0].Node)
	assert.Regexp(t, `^leases/`, v.Queue[2].Node)
	assert.Nil(t, v.Queue[2].Token, "a lease node waiting for room holds nothing yet")
	assert.Regexp(t, `^locks/`, v.Queue[3].Node)
	assert.Nil(t, v.Queue[3].Token, "no lease node yet, no token")
}

// A leader latch: the leader first.
func TestLsShowsALatchLeaderFirst(t *testing.T) {
	cl, connect := server(t)
	c1, c2 := client(t, cl), client(t, cl)
	l1, err := leader.NewLatch(c1, "/q/latch", leader.WithParticipantID("first"))
	require.NoError(t, err)
	t.Cleanup(func() { l1.Close() })
	require.NoError(t, l1.Start(context.Background()))
	term, err := l1.Await(testCtx(t))
	require.NoError(t, err)
	l2, err := leader.NewLatch(c2, "/q/latch", leader.WithParticipantID("second"))
	require.NoError(t, err)
	t.Cleanup(func() { l2.Close() })
	require.NoError(t, l2.Start(context.Background()))
	waitChildren(t, c1, "/q/latch", 2)

	v := lsJSON(t, connect, "/q/latch")
	assert.Equal(t, "latch", v.Kind)
	require.Len(t, v.Queue, 2)
	assert.Equal(t, []string{"holds", "first"}, []string{v.Queue[0].Role, v.Queue[0].ID})
	assert.Equal(t, term.Token(), *v.Queue[0].Token)
	assert.Equal(t, []string{"waits", "second"}, []string{v.Queue[1].Role, v.Queue[1].ID})
}

// Nobody queued, or no such path (lock directories are containers, which
// the server removes once empty): an empty queue, not an error. A path
// whose children are not queue nodes says what they are.
func TestLsOfAnEmptyOrMissingPathIsAnEmptyQueue(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	_, err := c.Create(testCtx(t), "/dir/a/b", nil, framework.WithParents())
	require.NoError(t, err)

	r := zkr(t, args(connect, cmd("ls", "/missing"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "/missing: nobody holds or waits\n", r.stdout)
	v := lsJSON(t, connect, "/missing")
	assert.Equal(t, lsView{Path: "/missing", Time: v.Time, Queue: []lsNode{}}, v)

	r = zkr(t, args(connect, cmd("ls", "/dir"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "/dir: nobody holds or waits; not a queue: its children are a\n", r.stdout)
}

// Global options go after PATH too, as for zkr leader; the namespace
// applies.
func TestLsTakesGlobalOptionsAfterPath(t *testing.T) {
	cl := zktest.Standalone(t)
	c := client(t, cl)
	m, err := mutex.New(c, "/ns/q", mutex.WithParticipantID("x"))
	require.NoError(t, err)
	holdMutex(t, m)
	r := zkr(t, "ls", "/q", "--connect", cl.ConnectString(), "--namespace", "ns")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, regexp.MustCompile(`(?m)^1 +holds +x `), r.stdout)
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// holder runs zkr lock --id id PATH until release is called; it waits in
// the queue while someone else holds PATH.
func holder(t *testing.T, connect []string, path, id string) (release func() result) {
	t.Helper()
	done := filepath.Join(t.TempDir(), "done")
	p := start(t, args(connect, cmd("lock", "--id", id, path), sh(waitFile(done)))...)
	return func() result {
		t.Helper()
		require.NoError(t, touch(done))
		return p.wait(t, 30*time.Second)
	}
}

// zkr ls --watch in a terminal, as a person watches a queue: the screen
// is redrawn as holders come and go, the times count on between changes,
// and Ctrl-C ends it with 130, as it ends every other zkr that waits.
func TestLsWatchRedrawsTheQueueLiveInATerminal(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	releaseAlice := holder(t, connect, "/live", "alice")
	waitChildren(t, c, "/live", 1)
	s := startShell(t)
	m := s.mark()
	s.typeKeys("TERM=xterm zkr " + strings.Join(connect, " ") + " ls --watch /live\n")
	s.expectAfter(m, `\x1b\[H`, 30*time.Second) // drawing, not printing
	s.expectAfter(m, `/live: lock, 1 holding, 0 waiting`, 10*time.Second)
	s.expectAfter(m, `\n1 +holds +alice +0x`, 10*time.Second)

	releaseBob := holder(t, connect, "/live", "bob")
	s.expectAfter(m, `\n2 +waits +bob +0x`, 30*time.Second)

	m = s.mark()
	require.Equal(t, 0, releaseAlice().code)
	s.expectAfter(m, `/live: lock, 1 holding, 0 waiting`, 30*time.Second)
	s.expectAfter(m, `\n1 +holds +bob +0x\w+ +\d+ +0s`, 10*time.Second) // from the grant it saw
	s.expectAfter(m, `\n1 +holds +bob +0x\w+ +\d+ +2s`, 10*time.Second) // redrawn, no change needed
	assert.NotRegexp(t, `alice`, s.screen()[m:], "alice is gone from the screen")

	s.typeKeys("\x03") // Ctrl-C
	assert.Equal(t, 130, s.status())
	assert.Len(t, children(t, c, "/live"), 1, "zkr ls took no place in the queue")
	require.Equal(t, 0, releaseBob().code)
}

// Without a terminal, zkr ls --watch prints the queue again at each
// change, and nothing else: no escapes, no redraw when only the times
// move. SIGTERM ends it with 143.
func TestLsWatchWithoutATerminalPrintsATablePerChange(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	p := start(t, args(connect, cmd("ls", "--watch", "/plain"))...)
	waitOutput(t, p, `^/plain: nobody holds or waits \(\d\d:\d\d:\d\d\)\n$`)
	release := holder(t, connect, "/plain", "alice")
	waitOutput(t, p, `\n\n/plain: lock, 1 holding, 0 waiting \(\d\d:\d\d:\d\d\)\nPOS +ROLE +ID +SESSION +TOKEN +FOR\n1 +holds +alice +0x\w+ +\d+ +\d+s\n$`)
	require.Equal(t, 0, release().code)
	waitChildren(t, c, "/plain", 0)
	out := waitOutput(t, p, `\n\n/plain: nobody holds or waits \(\d\d:\d\d:\d\d\)\n$`)
	time.Sleep(1500 * time.Millisecond) // an absence window: nothing changes, nothing is printed
	assert.Equal(t, out, p.stdout.String(), "printed without a change")
	assert.NotContains(t, out, "\x1b", "escapes without a terminal")
	p.signal(t, syscall.SIGTERM)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 143, r.code, r.stderr)
	assert.Equal(t, 3, strings.Count(r.stdout, "/plain:"), r.stdout)
}

// zkr ls --watch -o json prints one JSON object per change, each the whole
// queue: jq can follow it line by line.
func TestLsWatchJSONPrintsAnObjectPerChange(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	release := holder(t, connect, "/j", "alice")
	waitChildren(t, c, "/j", 1)
	p := start(t, args(connect, cmd("ls", "--watch", "-o", "json", "/j"))...)
	waitOutput(t, p, `^\{.*"id":"alice".*\}\n$`)
	releaseBob := holder(t, connect, "/j", "bob")
	out := waitOutput(t, p, `^\{.*\}\n\{.*"id":"bob".*\}\n$`)
	var v lsView
	require.NoError(t, json.Unmarshal([]byte(lines(out)[1]), &v))
	require.Len(t, v.Queue, 2)
	assert.Equal(t, []string{"holds", "alice", "waits", "bob"}, []string{v.Queue[0].Role, v.Queue[0].ID, v.Queue[1].Role, v.Queue[1].ID})
	p.signal(t, syscall.SIGINT)
	assert.Equal(t, 130, p.wait(t, 30*time.Second).code)
	require.Equal(t, 0, release().code)
	require.Equal(t, 0, releaseBob().code)
}

// waitOutput waits until p's whole stdout matches re, and returns it.
func waitOutput(t *testing.T, p *proc, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	var out string
	require.Eventually(t, func() bool {
		out = p.stdout.String()
		return rx.MatchString(out)
	}, 30*time.Second, 20*time.Millisecond, "stdout never matched %s; stderr:\n%s", re, p.stderr.String())
	return out
}

// A path a semaphore used before a mutex keeps the semaphore's leases/
// and locks/ directories (persistent in older Curators, containers until
// the server's next sweep in newer ones). They are not contenders: the
// mutex's queue is its lock- nodes alone. (They were shown as waiters.)
func TestLsDoesNotCountASemaphoresDirectoriesAsWaiters(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for _, p := range []string{"/used/leases", "/used/locks"} {
		_, err := c.Create(testCtx(t), p, nil, framework.WithParents())
		require.NoError(t, err)
	}
	m, err := mutex.New(c, "/used", mutex.WithParticipantID("holder"))
	require.NoError(t, err)
	holdMutex(t, m)

	v := lsJSON(t, connect, "/used")
	assert.Equal(t, "lock", v.Kind)
	assert.Equal(t, 1, v.Holding)
	assert.Equal(t, 0, v.Waiting, "a directory counted as a waiter: %+v", v.Queue)
	require.Len(t, v.Queue, 1)
	assert.Equal(t, "holder", v.Queue[0].ID)

	r := zkr(t, args(connect, cmd("ls", "/used"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^/used: lock, 1 holding, 0 waiting\n`, r.stdout)
	assert.Len(t, lines(r.stdout), 3, "the header, the column names, the holder:\n%s", r.stdout)
}

// Two kinds of lock in use on one path at once do not exclude each other:
// zkr ls shows the first kind's queue and says which other kinds hold or
// wait there, never the other kind's nodes as this one's waiters.
func TestLsSaysWhenAPathHoldsTwoKinds(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	m, err := mutex.New(c, "/both", mutex.WithParticipantID("locker"))
	require.NoError(t, err)
	holdMutex(t, m)
	s, err := semaphore.New(client(t, cl), "/both", 1, semaphore.WithParticipantID("leaser"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = s.Acquire(testCtx(t), 1)
	require.NoError(t, err)

	v := lsJSON(t, connect, "/both")
	assert.Equal(t, "lock", v.Kind)
	assert.Equal(t, []int{1, 0}, []int{v.Holding, v.Waiting})
	require.Len(t, v.Queue, 1)
	assert.Equal(t, "locker", v.Queue[0].ID)

	r := zkr(t, args(connect, cmd("ls", "-o", "json", "/both"))...)
	require.Equal(t, 0, r.code, r.stderr)
	var also struct {
		Also []string `json:"also"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &also))
	assert.Equal(t, []string{"semaphore"}, also.Also)

	r = zkr(t, args(connect, cmd("ls", "/both"))...)
	require.Equal(t, 0, r.code, r.stderr)
	head := lines(r.stdout)[0]
	assert.Regexp(t, `^/both: lock, 1 holding, 0 waiting; also semaphore nodes`, head)
	assert.NotContains(t, r.stdout, "leaser", "a lease shown in the mutex's queue")
}
