package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Whatever ends zkr, kill -9 included, ends COMMAND and every process it
// started: a child, and a grandchild in a session of its own (setsid).
// Before, the kernel's parent-death signal reached COMMAND's own process
// only, and its children ran on, unlocked.
func TestSIGKILLOfZkrEndsCommandsWholeTree(t *testing.T) {
	cl, connect := server(t)
	dir := t.TempDir()
	pid := func(name string) string { return filepath.Join(dir, name) }
	z := start(t, args(connect, cmd("lock", "/tree"), sh(
		`echo $$ > `+pid("command")+`
		 sleep 300 & echo $! > `+pid("child")+`
		 setsid sh -c 'sleep 300 & echo $! > `+pid("grandchild")+`; wait' &
		 echo $! > `+pid("setsid")+`
		 `+waitFile(pid("grandchild"))+`
		 echo ready; wait`))...)
	z.expectLine(t, "ready")
	pids := map[string]int{}
	for _, name := range []string{"command", "child", "setsid", "grandchild"} {
		b, err := os.ReadFile(pid(name))
		require.NoError(t, err)
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		pids[name] = n
		require.True(t, alive(n), "%s (pid %d) is not running before the kill", name, n)
	}

	require.NoError(t, z.cmd.Process.Kill())
	z.wait(t, 10*time.Second)
	deadline := time.Now().Add(time.Second)
	for name, n := range pids {
		for alive(n) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // polling the kernel's view
		}
		assert.False(t, alive(n), "%s (pid %d) outlived zkr by a second", name, n)
	}
	// The session lives until the server expires it; then the node goes.
	waitChildren(t, client(t, cl), "/tree", 0)
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	return state(pid) != 'Z'
}

// The default --grace, and the largest one accepted, end a COMMAND that
// ignores SIGTERM before a waiter on another session can be granted the
// lock: the holder's link is blackholed, and the two COMMANDs' stamps
// never interleave.
func TestCommandThatIgnoresSIGTERMDiesBeforeTheNextHolderStarts(t *testing.T) {
	const session = 4 * time.Second
	for name, grace := range map[string][]string{
		"default grace":       nil,
		"largest grace taken": {"--grace", maxGrace(session).String()},
	} {
		t.Run(name, func(t *testing.T) {
			cl, connect := server(t)
			p := cl.NewProxy()
			stamps := filepath.Join(t.TempDir(), "stamps")
			holder := start(t, args(cmd("--connect", p.ConnectString(), "--session-timeout", session.String(), "lock"), grace, cmd("/slack"),
				sh(`trap '' TERM; echo ready; while :; do echo "holder $(date +%s%N)" >> `+stamps+`; sleep 0.01; done`))...)
			holder.expectLine(t, "ready")
			waiter := start(t, args(connect, cmd("--session-timeout", session.String(), "lock", "/slack"),
				sh(`echo "waiter $(date +%s%N)" >> `+stamps))...)
			waitChildren(t, client(t, cl), "/slack", 2)

			p.Blackhole()
			r := holder.wait(t, 30*time.Second)
			assert.Equal(t, exitLost, r.code, r.stderr)
			assert.Equal(t, 0, waiter.wait(t, 30*time.Second).code)
			p.Heal()

			assertHolderEndedFirst(t, stamps)
		})
	}
}

// A --grace that does not fit the slack is refused before anything is
// contacted, with the largest safe value.
func TestGraceBeyondTheSlackIsRefused(t *testing.T) {
	r := zkr(t, "--connect", "127.0.0.1:1", "--session-timeout", "10s", "lock", "--grace", "5s", "/x", "--", "true")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "largest safe value is "+maxGrace(10*time.Second).String())
	r = zkr(t, "--connect", "127.0.0.1:1", "--session-timeout", "10s", "elect", "--grace", "5s", "/x", "--", "true")
	assert.Equal(t, exitUsage, r.code, r.stderr)
}

// assertHolderEndedFirst reads a file of "holder NANOS" and "waiter NANOS"
// lines (date +%s%N, one clock) and checks that no holder line comes after
// the first waiter line: the old COMMAND was dead before the next started.
func assertHolderEndedFirst(t *testing.T, stamps string) {
	t.Helper()
	b, err := os.ReadFile(stamps)
	require.NoError(t, err)
	var lastHolder, firstWaiter int64
	for _, l := range lines(string(b)) {
		who, at, _ := strings.Cut(l, " ")
		n, err := strconv.ParseInt(at, 10, 64)
		require.NoError(t, err, l)
		switch {
		case who == "holder":
			lastHolder = max(lastHolder, n)
		case who == "waiter" && firstWaiter == 0:
			firstWaiter = n
		}
	}
	require.NotZero(t, firstWaiter, "the waiter never ran")
	assert.Less(t, lastHolder, firstWaiter, "the old COMMAND ran %v after the next holder started",
		time.Duration(lastHolder-firstWaiter))
}
