package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func TestLockExitsWithCommandStatus(t *testing.T) {
	_, connect := server(t)
	r := zkr(t, args(connect, cmd("lock", "/status"), sh("exit 7"))...)
	assert.Equal(t, 7, r.code, r.stderr)

	r = zkr(t, args(connect, cmd("lock", "/status"), sh("kill -KILL $$"))...)
	assert.Equal(t, 128+9, r.code, "a COMMAND killed by a signal: 128+signal, as a shell says")
}

func TestLockGivesCommandTokenAndPathAndReleases(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	r := zkr(t, args(connect, cmd("lock", "/env/job"), sh(`echo $ZKR_FENCING_TOKEN $ZKR_LOCK_PATH`))...)
	require.Equal(t, 0, r.code, r.stderr)
	f := strings.Fields(r.stdout)
	require.Len(t, f, 2, r.stdout)
	token, err := strconv.ParseInt(f[0], 10, 64)
	require.NoError(t, err, "token %q is not a decimal number", f[0])
	assert.Positive(t, token)
	assert.Equal(t, "/env/job", f[1])
	assert.Empty(t, children(t, c, "/env/job"), "the lock node outlived zkr")
}

func TestLockSerializesRuns(t *testing.T) {
	_, connect := server(t)
	log := filepath.Join(t.TempDir(), "log")
	script := `echo "start $ZKR_FENCING_TOKEN" >> ` + log + `; sleep 0.5; echo end >> ` + log
	first := start(t, args(connect, cmd("lock", "/serial"), sh(script))...)
	second := start(t, args(connect, cmd("lock", "/serial"), sh(script))...)
	require.Equal(t, 0, first.wait(t, time.Minute).code)
	require.Equal(t, 0, second.wait(t, time.Minute).code)

	b, err := os.ReadFile(log)
	require.NoError(t, err)
	l := lines(string(b))
	require.Len(t, l, 4)
	assert.True(t, strings.HasPrefix(l[0], "start ") && l[1] == "end" && strings.HasPrefix(l[2], "start ") && l[3] == "end",
		"the runs overlapped:\n%s", b)
	t1, _ := strconv.ParseInt(strings.TrimPrefix(l[0], "start "), 10, 64)
	t2, _ := strconv.ParseInt(strings.TrimPrefix(l[2], "start "), 10, 64)
	assert.Less(t, t1, t2, "fencing tokens must grow from holder to holder")
}

// holdMutex takes the mutex at path in the test process, released when the
// test ends.
func holdMutex(t *testing.T, m *mutex.Mutex) {
	t.Helper()
	_, err := m.Acquire(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
}

func TestLockTimeoutExits124AndLeavesNoNode(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	m, err := mutex.New(c, "/busy")
	require.NoError(t, err)
	holdMutex(t, m)

	t0 := time.Now()
	r := zkr(t, args(connect, cmd("lock", "--timeout", "500ms", "/busy"), sh("echo ran"))...)
	assert.Equal(t, exitTimeout, r.code, r.stderr)
	assert.Empty(t, r.stdout, "COMMAND ran without the lock")
	assert.Contains(t, r.stderr, "timed out")
	assert.Less(t, time.Since(t0), 20*time.Second)
	assert.Len(t, children(t, c, "/busy"), 1, "only the holder's node may remain")
}

func TestLockSignalWhileWaitingLeavesQueue(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	m, err := mutex.New(c, "/busy")
	require.NoError(t, err)
	holdMutex(t, m)

	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(s.String(), func(t *testing.T) {
			p := start(t, args(connect, cmd("lock", "/busy"), sh("echo ran"))...)
			waitChildren(t, c, "/busy", 2)
			p.signal(t, s)
			r := p.wait(t, 30*time.Second)
			assert.Equal(t, 128+int(s), r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Len(t, children(t, c, "/busy"), 1, "the waiter's node outlived it")
		})
	}
}

func TestLockForwardsSignalToCommandThenReleases(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	got := filepath.Join(t.TempDir(), "got")
	p := start(t, args(connect, cmd("lock", "/fwd"),
		sh(`trap 'echo INT > `+got+`; exit 5' INT; echo ready; while :; do sleep 0.1; done`))...)
	p.expectLine(t, "ready")
	p.signal(t, syscall.SIGINT)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 5, r.code, "zkr exits with COMMAND's status: %s", r.stderr)
	b, _ := os.ReadFile(got)
	assert.Equal(t, "INT\n", string(b), "COMMAND did not get the signal")
	assert.Empty(t, children(t, c, "/fwd"))
}

// A holder cut off from ZooKeeper stops its COMMAND before the server can
// expire its session and grant the lock to anyone else.
func TestLockLostSendsTermAndExits122(t *testing.T) {
	cl, _ := server(t)
	p := cl.NewProxy()
	termed := filepath.Join(t.TempDir(), "termed")
	z := start(t, args(cmd("--connect", p.ConnectString(), "--session-timeout", "2s", "lock", "/lost"),
		sh(`trap 'echo TERM > `+termed+`; exit 0' TERM; echo ready; while :; do sleep 0.1; done`))...)
	z.expectLine(t, "ready")
	t0 := time.Now()
	p.Blackhole()
	r := z.wait(t, 30*time.Second)
	assert.Equal(t, exitLost, r.code, r.stderr)
	b, _ := os.ReadFile(termed)
	assert.Equal(t, "TERM\n", string(b), "COMMAND did not get SIGTERM")
	assert.Contains(t, r.stderr, "hold lost")
	t.Logf("zkr exited %v after the link went dark", time.Since(t0))
}

func TestLockLostKillsCommandThatIgnoresTermAfterGrace(t *testing.T) {
	cl, _ := server(t)
	p := cl.NewProxy()
	pidFile := filepath.Join(t.TempDir(), "pid")
	z := start(t, args(cmd("--connect", p.ConnectString(), "--session-timeout", "2s", "lock", "--grace", "250ms", "/lost"),
		sh(`trap '' TERM; echo $$ > `+pidFile+`; echo ready; while :; do sleep 0.1; done`))...)
	z.expectLine(t, "ready")
	p.Blackhole()
	r := z.wait(t, 30*time.Second)
	assert.Equal(t, exitLost, r.code, r.stderr)
	assert.Contains(t, r.stderr, "SIGKILL")
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "COMMAND survived")
}

func TestLockCommandNotFoundExits127BeforeConnecting(t *testing.T) {
	// Nothing listens on port 1: reaching ZooKeeper would fail with 125.
	r := zkr(t, "--connect", "127.0.0.1:1", "lock", "/x", "--", "no-such-command-zkr")
	assert.Equal(t, exitNotFound, r.code, r.stderr)
	r = zkr(t, "--connect", "127.0.0.1:1", "lock", "/x", "--", t.TempDir())
	assert.Equal(t, exitNoExec, r.code, "a directory cannot be run: %s", r.stderr)
}

func TestLockWithoutServerExits125(t *testing.T) {
	r := zkr(t, "--connect", "127.0.0.1:1", "--dial-timeout", "1s", "lock", "/x", "--", "true")
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no session")
}

// /zookeeper is the server's own tree (its quotas, its dynamic
// configuration): every subcommand that makes nodes refuses it, and
// anything under it, with 2 before anything is sent, whether PATH, a
// --namespace or a chroot puts it there. A lock there was taken.
func TestWritingSubcommandsRefuseTheServersOwnTree(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	before := children(t, c, "/zookeeper")
	for name, a := range map[string][]string{
		"lock":                     {"lock", "/zookeeper/x", "--", "true"},
		"lock /zookeeper":          {"lock", "/zookeeper", "--", "true"},
		"lock without COMMAND":     {"lock", "/zookeeper/x"},
		"rlock":                    {"rlock", "/zookeeper/quota/x", "--", "true"},
		"wlock":                    {"wlock", "/zookeeper/x", "--", "true"},
		"sem":                      {"sem", "--max", "2", "/zookeeper/x", "--", "true"},
		"elect":                    {"elect", "/zookeeper/x", "--", "true"},
		"lock -n":                  {"lock", "-n", "/zookeeper/x", "--", "true"},
		"under --namespace":        {"--namespace", "zookeeper", "lock", "/x", "--", "true"},
		"under a deeper namespace": {"--namespace", "zookeeper/quota", "elect", "/x", "--", "true"},
		"under a chroot":           {"--connect", cl.ConnectString() + "/zookeeper", "wlock", "/x", "--", "true"},
	} {
		t.Run(name, func(t *testing.T) {
			r := zkr(t, args(connect, a)...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Empty(t, r.stdout, "COMMAND ran")
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "want one line, got:\n%s", r.stderr)
			assert.Contains(t, r.stderr, "is ZooKeeper's own tree")
		})
	}
	assert.Equal(t, before, children(t, c, "/zookeeper"), "a node was made in /zookeeper")

	// Refused before anything is sent: with no server to reach, 2, not 125.
	r := zkr(t, "--connect", "127.0.0.1:1", "lock", "/zookeeper/x", "--", "true")
	assert.Equal(t, exitUsage, r.code, r.stderr)

	// /zookeeper below a namespace is an ordinary path.
	r = zkr(t, args(connect, cmd("--namespace", "app", "lock", "/zookeeper/x"), sh("echo ran"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ran\n", r.stdout)
}
