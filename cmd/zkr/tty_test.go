package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zkr in an interactive shell, as a person uses it: bash with job control
// on a pseudo-terminal, keys typed into it, and the screen read back.

// shell is an interactive bash on a pseudo-terminal.
type shell struct {
	t    *testing.T
	pty  *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
}

func startShell(t *testing.T) *shell {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash is needed for the terminal tests: %v", err)
	}
	cmd := exec.Command("bash", "--norc", "--noprofile", "-i")
	cmd.Env = append(os.Environ(), "PS1=$ ", "TERM=dumb", "PATH="+filepath.Dir(zkrBin)+":"+os.Getenv("PATH"),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 250})
	require.NoError(t, err)
	s := &shell{t: t, pty: f, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		// Everything the test left on the terminal goes first: a process
		// still holding it (a job, script's child) would keep the reader
		// blocked, and a failed test would hang instead of failing.
		killSession(cmd.Process.Pid)
		_ = cmd.Wait()
		f.Close()
		<-s.done
	})
	s.expect(`\$ $`, 10*time.Second) // the first prompt
	return s
}

// killSession SIGKILLs every process of session sid (the shell leads it,
// as pty.Start makes it).
func killSession(sid int) {
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...: comm may hold spaces.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 3 && f[3] == strconv.Itoa(sid) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// screen is everything the terminal has shown.
func (s *shell) screen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// mark is where the screen ends now: expect after it sees only what comes
// later.
func (s *shell) mark() int { return len(s.screen()) }

func (s *shell) typeKeys(keys string) {
	s.t.Helper()
	_, err := io.WriteString(s.pty, keys)
	require.NoError(s.t, err)
}

// expectAfter waits until the screen after mark matches re and returns the
// first match's submatches.
func (s *shell) expectAfter(mark int, re string, timeout time.Duration) []string {
	s.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(timeout)
	for {
		scr := s.screen()
		if m := rx.FindStringSubmatch(scr[min(mark, len(scr)):]); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the terminal never showed %q after %v; it shows:\n%s", re, timeout, scr[min(mark, len(scr)):])
		}
		time.Sleep(20 * time.Millisecond) // polling the screen
	}
}

func (s *shell) expect(re string, timeout time.Duration) []string {
	return s.expectAfter(0, re, timeout)
}

// run types a command line and waits for the line that follows "mark".
func (s *shell) status() int {
	s.t.Helper()
	m := s.mark()
	s.typeKeys("echo \"status:$?\"\n")
	got := s.expectAfter(m, `\nstatus:(\d+)`, 30*time.Second)
	n, _ := strconv.Atoi(got[1])
	return n
}

// A COMMAND that reads the terminal gets what is typed, and Ctrl-C ends
// COMMAND (not just zkr), which releases and exits with its status. Before,
// COMMAND was not the terminal's foreground job: reading stopped it
// (SIGTTIN), and Ctrl-C reached zkr but not COMMAND.
func TestTerminalReadAndCtrlC(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	s := startShell(t)
	zkrLine := "zkr " + strings.Join(connect, " ") + " lock /tty -- "

	m := s.mark()
	s.typeKeys(zkrLine + `sh -c 'echo ready; read line; echo "got:$line"'` + "\n")
	s.expectAfter(m, `\nready`, 30*time.Second)
	s.typeKeys("hello\n")
	s.expectAfter(m, `got:hello`, 10*time.Second)
	assert.Equal(t, 0, s.status())

	m = s.mark()
	s.typeKeys(zkrLine + `sh -c 'echo ready; sleep 300'` + "\n")
	s.expectAfter(m, `\nready`, 30*time.Second)
	s.typeKeys("\x03") // Ctrl-C
	assert.Equal(t, 130, s.status(), "COMMAND's status: killed by SIGINT")
	waitChildren(t, c, "/tty", 0)
}

// Ctrl-Z stops COMMAND and gives the terminal back to the shell; fg and bg
// continue it, while the hold is intact. Before, Ctrl-Z stopped zkr alone:
// its session expired while COMMAND ran on.
func TestTerminalCtrlZThenFgAndBg(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	s := startShell(t)
	m := s.mark()
	s.typeKeys("zkr " + strings.Join(connect, " ") + ` lock /tty -- sh -c 'i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.1; done'` + "\n")
	s.expectAfter(m, `tick 3`, 30*time.Second)

	s.typeKeys("\x1a") // Ctrl-Z
	s.expectAfter(m, `Stopped`, 10*time.Second)
	m = s.mark()
	time.Sleep(time.Second) // an absence window: a stopped COMMAND prints nothing
	assert.NotContains(t, s.screen()[m:], "tick", "COMMAND ran on after Ctrl-Z")
	assert.Len(t, children(t, c, "/tty"), 1, "the lock is still held")

	s.typeKeys("fg\n")
	s.expectAfter(m, `tick \d+`, 10*time.Second)

	s.typeKeys("\x1a")
	s.expectAfter(m, `Stopped`, 10*time.Second)
	m = s.mark()
	s.typeKeys("bg\n")
	s.expectAfter(m, `tick \d+`, 10*time.Second) // running in the background

	m = s.mark()
	s.typeKeys("fg\n")
	s.expectAfter(m, `tick \d+`, 10*time.Second)
	s.typeKeys("\x03")
	assert.Equal(t, 130, s.status())
	waitChildren(t, c, "/tty", 0)
}

// A COMMAND stopped with Ctrl-Z never runs again once its hold is lost: the
// session expires while zkr is stopped, a waiter on another session takes
// the lock, and fg kills COMMAND instead of continuing it (exit 122). The
// two COMMANDs never overlap.
func TestTerminalFgAfterTheHoldWasLostKillsCommand(t *testing.T) {
	_, connect := server(t)
	stamps := filepath.Join(t.TempDir(), "stamps")
	s := startShell(t)
	stopHolderAndLetAWaiterIn(t, s, connect, stamps, "")

	m := s.mark()
	s.typeKeys("fg\n")
	assert.Equal(t, exitLost, s.status(), "fg after the loss")
	assert.NotRegexp(t, `\ntick\r?\n`, s.screen()[m:], "COMMAND ran again after fg")

	assertHolderEndedFirst(t, stamps)
}

// stopHolderAndLetAWaiterIn runs zkr lock /tty in s (2 s session) with a
// COMMAND that ticks and stamps stamps (and writes its pid to pidFile, if
// given), stops it with Ctrl-Z, and lets a waiter on another session take
// the lock, stamp, and finish: the hold was lost while the job was stopped.
func stopHolderAndLetAWaiterIn(t *testing.T, s *shell, connect []string, stamps, pidFile string) {
	t.Helper()
	pid := ""
	if pidFile != "" {
		pid = `echo $$ > ` + pidFile + `; `
	}
	m := s.mark()
	s.typeKeys("zkr " + strings.Join(connect, " ") + " --session-timeout 2s lock /tty -- sh -c '" + pid +
		`while :; do echo "holder $(date +%s%N)" >> ` + stamps + `; echo tick; sleep 0.05; done` + "'\n")
	s.expectAfter(m, `\ntick\r?\n`, 30*time.Second) // COMMAND's, not the echo of the line typed
	s.typeKeys("\x1a")
	s.expectAfter(m, `Stopped`, 10*time.Second)

	waiter := start(t, args(connect, cmd("lock", "/tty"), sh(
		`echo "waiter $(date +%s%N)" >> `+stamps+`; sleep 0.5; echo "waiter $(date +%s%N)" >> `+stamps))...)
	require.Equal(t, 0, waiter.wait(t, 30*time.Second).code, "the waiter never got the lock")
}

// bg, like fg, never continues a COMMAND whose hold was lost while it was
// stopped: COMMAND is killed, zkr exits 122, and the waiter on another
// session never overlaps it.
func TestTerminalBgAfterTheHoldWasLostKillsCommand(t *testing.T) {
	_, connect := server(t)
	stamps := filepath.Join(t.TempDir(), "stamps")
	s := startShell(t)
	stopHolderAndLetAWaiterIn(t, s, connect, stamps, "")

	m := s.mark()
	s.typeKeys("bg\n")
	s.typeKeys("wait %1\n")
	assert.Equal(t, exitLost, s.status(), "bg after the loss")
	assert.NotRegexp(t, `\ntick\r?\n`, s.screen()[m:], "COMMAND ran again after bg")
	assertHolderEndedFirst(t, stamps)
}

// Under stty tostop a background zkr stops (SIGTTOU) when it writes to the
// terminal: it sends the supervisor its command before it logs. bg after
// the loss kills the stopped COMMAND at once, even though zkr's own
// message then stops zkr until fg. Before, zkr logged first and stopped,
// and COMMAND was left stopped, not killed, until fg.
func TestTerminalTostopBgAfterTheHoldWasLostKillsCommandAtOnce(t *testing.T) {
	_, connect := server(t)
	dir := t.TempDir()
	stamps, pidFile := filepath.Join(dir, "stamps"), filepath.Join(dir, "pid")
	s := startShell(t)
	s.typeKeys("stty tostop\n")
	stopHolderAndLetAWaiterIn(t, s, connect, stamps, pidFile)
	command := readPid(t, pidFile)

	s.typeKeys("bg\n")
	assert.Eventually(t, func() bool { return !alive(command) }, 10*time.Second, 10*time.Millisecond, "COMMAND was not killed on bg")
	// zkr stops on its own message (SIGTTOU): fg only once it has, as the
	// shell's jobs shows.
	for deadline := time.Now().Add(10 * time.Second); ; {
		m := s.mark()
		s.typeKeys("jobs\n")
		if strings.Contains(s.expectAfter(m, `(?s)jobs.*\n\$ $`, 10*time.Second)[0], "Stopped") {
			break
		}
		require.True(t, time.Now().Before(deadline), "zkr never stopped on its own message")
		time.Sleep(50 * time.Millisecond) // polling the shell
	}
	s.typeKeys("fg\n") // zkr finishes
	assert.Equal(t, exitLost, s.status())
	assertHolderEndedFirst(t, stamps)
}

// After Ctrl-Z and bg the shell owns the terminal, and keeps it when the
// backgrounded COMMAND ends: the supervisor gives the terminal back only if
// COMMAND's group has it. Before, it handed the terminal to zkr's group as
// COMMAND ended, and the shell lost it.
func TestTerminalBgThenCommandEndsLeavesTheShellItsTerminal(t *testing.T) {
	_, connect := server(t)
	done := filepath.Join(t.TempDir(), "done")
	s := startShell(t)
	m := s.mark()
	s.typeKeys("zkr " + strings.Join(connect, " ") + " lock /tty -- sh -c 'echo ready; " + waitFile(done) + "; echo finished'\n")
	s.expectAfter(m, `\nready`, 30*time.Second)
	s.typeKeys("\x1a")
	s.expectAfter(m, `Stopped`, 10*time.Second)
	m = s.mark()
	s.typeKeys("bg\n")
	s.expectAfter(m, `\$ $`, 10*time.Second) // the shell's prompt: the job runs in the background
	require.NoError(t, touch(done))
	s.expectAfter(m, `finished`, 10*time.Second)
	require.Eventually(t, func() bool { return len(childrenOf(s.cmd.Process.Pid)) == 0 }, 10*time.Second, 10*time.Millisecond, "zkr did not exit")
	m = s.mark()
	s.typeKeys("echo alive-$((6*7))\n")
	s.expectAfter(m, `alive-42`, 10*time.Second)
}

// zkr started where no job-control shell can continue it (script -c, as
// ssh -t, xterm -e or docker run -it do) leads its own session: its process
// group is orphaned, the stop it would send itself at Ctrl-Z is discarded,
// and nothing can fg it. So zkr does not play at job control there: Ctrl-Z
// stops COMMAND alone, zkr keeps the hold and takes the terminal back, and
// Ctrl-C then reaches zkr, which passes it to COMMAND, checks the hold and
// lets COMMAND act on it: COMMAND's status, the lock released, long before
// the watchdog. Before, zkr stopped as under job control (to no effect),
// the Ctrl-C stayed pending on the stopped COMMAND, and the watchdog killed
// it at 2/3 of the session timeout (122).
func TestTerminalCtrlZThenCtrlCWithoutAJobControlShellEndsCommand(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	s := startShell(t)
	m := s.mark()
	s.typeKeys(`script -qec "zkr --session-timeout 10s ` + strings.Join(connect, " ") +
		` lock /tty-nojc -- sh -c 'echo ready; sleep 300'" /dev/null; echo "exit:$?"` + "\n")
	s.expectAfter(m, `\nready`, 30*time.Second)
	start := time.Now()
	s.typeKeys("\x1a") // Ctrl-Z
	s.expectAfter(m, `Ctrl-C ends COMMAND`, 5*time.Second)
	s.typeKeys("\x03") // Ctrl-C
	// exit: follows ^C on its line
	got := s.expectAfter(m, `exit:(\d+)`, 30*time.Second)
	assert.Less(t, time.Since(start), 4*time.Second, "zkr waited for the watchdog (about 6.7 s)")
	assert.Contains(t, []string{"130", "122"}, got[1], "zkr's status: COMMAND's (SIGINT) or 122")
	waitChildren(t, c, "/tty-nojc", 0)
}

// A COMMAND of a zkr started in the background (&) that reads the terminal
// stops (SIGTTIN) while zkr keeps the hold; fg makes zkr check the hold
// and continue COMMAND as the terminal's foreground job, which reads what
// is typed. Before, fg brought zkr alone to the foreground, and COMMAND
// stayed stopped, holding the lock for ever.
func TestTerminalBackgroundCommandReadsAfterFg(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	s := startShell(t)
	m := s.mark()
	s.typeKeys("zkr " + strings.Join(connect, " ") + ` lock /tty-bg -- sh -c 'read x; echo got-$x' &` + "\n")
	s.expectAfter(m, `\[1\] \d+`, 10*time.Second)
	require.Eventually(t, func() bool { return len(children(t, c, "/tty-bg")) == 1 }, 30*time.Second, 20*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // COMMAND reads, and stops
	m = s.mark()
	s.typeKeys("fg\n")
	time.Sleep(500 * time.Millisecond) // COMMAND gets the terminal
	s.typeKeys("hi\n")
	s.expectAfter(m, `got-hi`, 10*time.Second)
	assert.Equal(t, 0, s.status())
	waitChildren(t, c, "/tty-bg", 0)
}
