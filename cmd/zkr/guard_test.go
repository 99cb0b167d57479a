package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The holes an adversarial review of the supervisor found, each shown
// first against the code before the fix.

func readPid(t *testing.T, f string) int {
	t.Helper()
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return n
}

// COMMAND inherits none of the supervisor's pipes: with them it could eat
// zkr's heartbeats or forge "exited 0". Before, fds 3 and 4 leaked into
// the whole tree.
func TestCommandInheritsNoSupervisorPipe(t *testing.T) {
	_, connect := server(t)
	r := zkr(t, args(connect, cmd("lock", "/fd"), sh(`test -e /proc/$$/fd/3 && echo "fd 3"; test -e /proc/$$/fd/4 && echo "fd 4"; echo done`))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "done\n", r.stdout)
}

// A supervisor that dies without a word (kill -9) is a failure, not
// COMMAND's success, and what COMMAND started in its process group dies
// before the lock is released. Before, zkr exited 0.
func TestSupervisorDeathFailsAndEndsCommandsGroup(t *testing.T) {
	_, connect := server(t)
	child := filepath.Join(t.TempDir(), "child")
	z := start(t, args(connect, cmd("lock", "/supdie"), sh(`sleep 300 & echo $! > `+child+`; echo ready; wait`))...)
	z.expectLine(t, "ready")
	sup := childrenOf(z.cmd.Process.Pid)
	require.Len(t, sup, 1)
	require.NoError(t, syscall.Kill(sup[0], syscall.SIGKILL))
	r := z.wait(t, 10*time.Second)
	assert.Equal(t, exitFailed, r.code, r.stderr)
	n := readPid(t, child)
	assert.Eventually(t, func() bool { return !alive(n) }, 5*time.Second, 10*time.Millisecond, "COMMAND's child outlived the supervisor")
}

// killall -9 zkr kills the processes named zkr: the supervisor is not one
// of them, and ends COMMAND's whole tree when zkr dies. Before, it shared
// zkr's name and died with it, and COMMAND's child ran on unlocked.
func TestKillallZkrLeavesTheSupervisorToEndTheTree(t *testing.T) {
	_, connect := server(t)
	child := filepath.Join(t.TempDir(), "child")
	z := start(t, args(connect, cmd("lock", "/killall"), sh(`sleep 300 & echo $! > `+child+`; echo ready; wait`))...)
	z.expectLine(t, "ready")
	sup := childrenOf(z.cmd.Process.Pid)
	require.Len(t, sup, 1)
	for _, pid := range []int{z.cmd.Process.Pid, sup[0]} {
		if comm(pid) == "zkr" { // what killall -9 zkr does
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	z.wait(t, 10*time.Second)
	n := readPid(t, child)
	assert.Eventually(t, func() bool { return !alive(n) }, 5*time.Second, 10*time.Millisecond, "COMMAND's child outlived killall -9 zkr")
}

func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// Stopping zkr's job from the shell (kill -STOP %1, or SIGTTOU under stty
// tostop) freezes zkr, not the supervisor: COMMAND is stopped before
// anyone else can be granted the lock. Before, the supervisor froze with
// zkr, and COMMAND, in a process group of its own, ran beside the next
// holder.
func TestStoppingZkrsJobEndsCommandBeforeTheNextHolder(t *testing.T) {
	const session = 4 * time.Second
	_, connect := server(t)
	stamps := filepath.Join(t.TempDir(), "stamps")
	c := exec.Command(zkrBin, args(connect, cmd("--session-timeout", session.String(), "lock", "/stopjob"),
		sh(`while :; do echo "holder $(date +%s%N)" >> `+stamps+`; sleep 0.01; done`))...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a job of its own, as a shell makes it
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGCONT); _ = c.Process.Kill(); _ = c.Wait() })
	// COMMAND's first stamp, not the lock node: the node exists before zkr
	// knows it holds the lock, and a zkr stopped in between never runs
	// COMMAND at all (its take fails on the expired session: 125).
	require.Eventually(t, func() bool { _, err := os.Stat(stamps); return err == nil }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, syscall.Kill(-c.Process.Pid, syscall.SIGSTOP)) // kill -STOP %1

	waiter := start(t, args(connect, cmd("--session-timeout", session.String(), "lock", "/stopjob"),
		sh(`echo "waiter $(date +%s%N)" >> `+stamps+`; sleep 0.5; echo "waiter $(date +%s%N)" >> `+stamps))...)
	r := waiter.wait(t, 30*time.Second)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, syscall.Kill(-c.Process.Pid, syscall.SIGCONT))
	err := c.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, exitLost, ee.ExitCode())
	assertHolderEndedFirst(t, stamps)
}

// Ctrl-Z stops all of COMMAND's tree, not only its process group: a
// descendant in a session of its own (setsid) stops too, and never runs
// beside the next holder. Before, it ran on while zkr was stopped.
func TestTerminalCtrlZStopsCommandsWholeTree(t *testing.T) {
	_, connect := server(t)
	stamps := filepath.Join(t.TempDir(), "stamps")
	s := startShell(t)
	m := s.mark()
	s.typeKeys("zkr " + strings.Join(connect, " ") + " --session-timeout 2s lock /tty -- sh -c '" +
		`setsid sh -c "while :; do echo holder \$(date +%s%N) >> ` + stamps + `; sleep 0.05; done" & echo tick; wait` + "'\n")
	s.expectAfter(m, `\ntick\r?\n`, 30*time.Second)
	s.typeKeys("\x1a")
	s.expectAfter(m, `Stopped`, 10*time.Second)

	waiter := start(t, args(connect, cmd("lock", "/tty"), sh(
		`echo "waiter $(date +%s%N)" >> `+stamps+`; sleep 0.5; echo "waiter $(date +%s%N)" >> `+stamps))...)
	require.Equal(t, 0, waiter.wait(t, 30*time.Second).code, "the waiter never got the lock")
	s.typeKeys("fg\n")
	assert.Equal(t, exitLost, s.status(), "fg after the loss")
	assertHolderEndedFirst(t, stamps)
}

// A SIGCONT that zkr did not send (kill -CONT, a debugger) does not let a
// COMMAND stopped with Ctrl-Z run while zkr, stopped too, watches nothing:
// the supervisor stops the tree again at once, and fg after the loss kills
// it. COMMAND's whole process group is continued, not only its pid: sh
// waits for a stopped sleep, and would not run on alone. Before, the
// continued COMMAND ran beside the next holder (no watchdog while stopped).
func TestTerminalForeignSIGCONTDoesNotResumeCommand(t *testing.T) {
	_, connect := server(t)
	dir := t.TempDir()
	stamps, pidFile := filepath.Join(dir, "stamps"), filepath.Join(dir, "pid")
	s := startShell(t)
	m := s.mark()
	s.typeKeys("zkr " + strings.Join(connect, " ") + " --session-timeout 2s lock /tty -- sh -c '" +
		`echo $$ > ` + pidFile + `; while :; do echo "holder $(date +%s%N)" >> ` + stamps + `; echo tick; sleep 0.05; done` + "'\n")
	s.expectAfter(m, `\ntick\r?\n`, 30*time.Second)
	s.typeKeys("\x1a")
	s.expectAfter(m, `Stopped`, 10*time.Second)
	command := readPid(t, pidFile)
	require.NoError(t, syscall.Kill(command, syscall.SIGCONT))  // kill -CONT PID
	require.NoError(t, syscall.Kill(-command, syscall.SIGCONT)) // kill -CONT -PGID

	waiter := start(t, args(connect, cmd("lock", "/tty"), sh(
		`echo "waiter $(date +%s%N)" >> `+stamps+`; sleep 0.5; echo "waiter $(date +%s%N)" >> `+stamps))...)
	require.Equal(t, 0, waiter.wait(t, 30*time.Second).code, "the waiter never got the lock")
	s.typeKeys("fg\n")
	assert.Equal(t, exitLost, s.status(), "fg after the loss")
	assertHolderEndedFirst(t, stamps)
}

// Without a terminal (cron, systemd, CI) a COMMAND stopped by kill -STOP
// changes nothing for zkr: it does not stop itself, it keeps its session
// and the hold beyond the session timeout, and kill -CONT continues
// COMMAND, which then ends normally. Before, zkr stopped its own job as
// under Ctrl-Z, and its session expired.
func TestWithoutTerminalAStoppedCommandLeavesZkrRunning(t *testing.T) {
	const session = 2 * time.Second
	cl, connect := server(t)
	c := client(t, cl)
	dir := t.TempDir()
	pidFile, ticks, done := filepath.Join(dir, "pid"), filepath.Join(dir, "ticks"), filepath.Join(dir, "done")
	z := startJob(t, args(connect, cmd("--session-timeout", session.String(), "lock", "/nojc"), sh(
		`echo $$ > `+pidFile+`; echo ready; while [ ! -e `+done+` ]; do echo tick >> `+ticks+`; sleep 0.05; done`))...)
	z.expectLine(t, "ready")
	node := children(t, c, "/nojc")
	require.Len(t, node, 1)
	command := readPid(t, pidFile)
	require.NoError(t, syscall.Kill(command, syscall.SIGSTOP))
	require.Eventually(t, func() bool { return state(command) == 'T' }, 5*time.Second, 10*time.Millisecond)

	// An absence window longer than the session timeout: zkr never stops.
	for end := time.Now().Add(session * 3 / 2); time.Now().Before(end); {
		require.NotEqual(t, byte('T'), state(z.cmd.Process.Pid), "zkr stopped itself")
		time.Sleep(20 * time.Millisecond) // polling zkr's state
	}
	assert.Equal(t, node, children(t, c, "/nojc"), "the hold did not survive the stop")

	ticked := func() int { b, _ := os.ReadFile(ticks); return strings.Count(string(b), "\n") }
	before := ticked()
	require.NoError(t, syscall.Kill(command, syscall.SIGCONT))
	require.Eventually(t, func() bool { return ticked() > before }, 5*time.Second, 10*time.Millisecond, "COMMAND did not go on after kill -CONT")
	require.NoError(t, touch(done))
	r := z.wait(t, 30*time.Second)
	assert.Equal(t, 0, r.code, r.stderr)
}

// A COMMAND killed (kill -9, the OOM killer) while its job is stopped
// leaves its orphans to the supervisor, which kills them outright: zkr is
// stopped, the hold may be gone, and nothing of the tree may run again,
// not even a SIGTERM handler. Before, the supervisor sent them SIGTERM and
// SIGCONT, and their handlers ran while zkr vouched for nothing.
func TestTerminalCommandKilledUnderCtrlZLeavesNoOrphanToRun(t *testing.T) {
	_, connect := server(t)
	dir := t.TempDir()
	pidFile, childFile, stamp := filepath.Join(dir, "pid"), filepath.Join(dir, "child"), filepath.Join(dir, "stamp")
	s := startShell(t)
	m := s.mark()
	s.typeKeys("zkr " + strings.Join(connect, " ") + " lock /tty -- sh -c '" +
		`echo $$ > ` + pidFile + `; sh -c "trap \"echo term > ` + stamp + `; exit\" TERM; sleep 300 & wait" & echo $! > ` + childFile + `; echo tick; wait` + "'\n")
	s.expectAfter(m, `\ntick\r?\n`, 30*time.Second)
	s.typeKeys("\x1a")
	s.expectAfter(m, `Stopped`, 10*time.Second)
	command, child := readPid(t, pidFile), readPid(t, childFile)
	require.Eventually(t, func() bool { return state(child) == 'T' }, 5*time.Second, 10*time.Millisecond, "COMMAND's child was not stopped")

	require.NoError(t, syscall.Kill(command, syscall.SIGKILL))
	assert.Eventually(t, func() bool { return !alive(child) }, 10*time.Second, 10*time.Millisecond, "COMMAND's child outlived it")
	_, err := os.Stat(stamp)
	assert.True(t, os.IsNotExist(err), "COMMAND's orphan ran its SIGTERM handler while the job was stopped")
	s.typeKeys("fg\n")
	assert.Equal(t, 128+int(syscall.SIGKILL), s.status(), "COMMAND's status")
}

// The watchdog runs on while the job is stopped: zkr, stopped too, sends no
// heartbeat, so once the budget has passed (the hold can no longer be
// vouched for) the supervisor kills the stopped tree, and a SIGCONT that
// comes later (kill -CONT) finds nothing to continue. fg then says 122 and
// the shell has its terminal back. Before, the stopped tree lived on
// unwatched until fg, and a foreign SIGCONT let it run until the
// supervisor's next look, however long after the loss.
func TestTerminalWatchdogKillsAStoppedJobOnceTheBudgetHasPassed(t *testing.T) {
	const session = 2 * time.Second
	_, connect := server(t)
	dir := t.TempDir()
	stamps, pidFile := filepath.Join(dir, "stamps"), filepath.Join(dir, "pid")
	s := startShell(t)
	m := s.mark()
	s.typeKeys("zkr " + strings.Join(connect, " ") + " --session-timeout " + session.String() + " lock /tty -- sh -c '" +
		`echo $$ > ` + pidFile + `; while :; do echo "holder $(date +%s%N)" >> ` + stamps + `; echo tick; sleep 0.05; done` + "'\n")
	s.expectAfter(m, `\ntick\r?\n`, 30*time.Second)
	s.typeKeys("\x1a")
	s.expectAfter(m, `Stopped`, 10*time.Second)
	stoppedAt := time.Now()
	command := readPid(t, pidFile)

	require.Eventually(t, func() bool { return !alive(command) }, 10*time.Second, 10*time.Millisecond,
		"the stopped COMMAND is still there after the watchdog's budget")
	assert.Less(t, time.Since(stoppedAt), session, "killed too late")
	_ = syscall.Kill(command, syscall.SIGCONT)  // kill -CONT PID
	_ = syscall.Kill(-command, syscall.SIGCONT) // kill -CONT -PGID
	b, err := os.ReadFile(stamps)
	require.NoError(t, err)
	for _, l := range lines(string(b)) {
		_, at, _ := strings.Cut(l, " ")
		n, err := strconv.ParseInt(at, 10, 64)
		require.NoError(t, err, l)
		assert.Less(t, n, stoppedAt.UnixNano(), "the stopped COMMAND ran: %s", l)
	}

	m = s.mark()
	s.typeKeys("fg\n")
	assert.Equal(t, exitLost, s.status(), "fg after the watchdog")
	s.typeKeys("echo alive-$((6*7))\n")
	s.expectAfter(m, `alive-42`, 10*time.Second)
}
