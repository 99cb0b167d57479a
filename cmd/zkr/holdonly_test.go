package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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

	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// startFed is start with zkr's stdin a pipe the test writes to and closes.
func startFed(t *testing.T, args ...string) (*proc, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(zkrBin, args...)
	cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	p := &proc{cmd: cmd, lines: make(chan string, 100), done: make(chan struct{})}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = &p.stderr
	require.NoError(t, cmd.Start())
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.stdout.Write([]byte(sc.Text() + "\n"))
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		err := cmd.Wait()
		p.res = result{code: cmd.ProcessState.ExitCode(), stdout: p.stdout.String(), stderr: p.stderr.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			p.res.code = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p, stdin
}

// heldLine waits for the line zkr prints once it holds without COMMAND.
func (p *proc) heldLine(t *testing.T) string {
	t.Helper()
	select {
	case l := <-p.lines:
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("no line from zkr after 30s; stderr:\n%s", p.stderr.String())
		return ""
	}
}

// tokenAndNode parses the line zkr prints when it holds without COMMAND.
func tokenAndNode(t *testing.T, line string) (int64, string) {
	t.Helper()
	f := strings.Fields(line)
	require.Len(t, f, 2, "want TOKEN NODE, got %q", line)
	token, err := strconv.ParseInt(f[0], 10, 64)
	require.NoError(t, err, "token %q", f[0])
	return token, f[1]
}

// Without COMMAND, zkr lock holds (as etcdctl lock NAME): it prints the
// fencing token and its node, holds while its stdin is open, and releases
// and exits 0 when stdin ends.
func TestLockWithoutCommandHoldsUntilStdinEnds(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	p, stdin := startFed(t, args(connect, cmd("lock", "/held"))...)
	token, node := tokenAndNode(t, p.heldLine(t))
	assert.Positive(t, token)
	assert.Equal(t, []string{filepath.Base(node)}, children(t, c, "/held"), "the node printed is the holder's")
	r := zkr(t, args(connect, cmd("lock", "-n", "/held", "--", "echo", "ran"))...)
	assert.Equal(t, 1, r.code, "the lock is held: %s", r.stderr)

	_, err := io.WriteString(stdin, "anything\n") // read and ignored
	require.NoError(t, err)
	require.NoError(t, stdin.Close())
	res := p.wait(t, 30*time.Second)
	assert.Equal(t, 0, res.code, res.stderr)
	assert.Empty(t, children(t, c, "/held"), "the node outlived zkr")
}

// A signal ends a hold without COMMAND as the end of stdin does: released,
// exit 0. SIGQUIT included.
func TestLockWithoutCommandReleasesOnSignals(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP} {
		t.Run(s.String(), func(t *testing.T) {
			p, _ := startFed(t, args(connect, cmd("lock", "/held-sig"))...)
			p.heldLine(t)
			waitChildren(t, c, "/held-sig", 1)
			p.signal(t, s)
			r := p.wait(t, 30*time.Second)
			assert.Equal(t, 0, r.code, r.stderr)
			assert.Empty(t, children(t, c, "/held-sig"))
		})
	}
}

// rlock, wlock and sem hold without COMMAND too, each with its own kind of
// node, and release at the end of stdin.
func TestEveryLockKindHoldsWithoutCommand(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for name, a := range map[string][]string{
		"rlock": {"rlock", "/kinds/rw"},
		"wlock": {"wlock", "/kinds/rw"},
		"sem":   {"sem", "--max", "2", "/kinds/sem"},
	} {
		t.Run(name, func(t *testing.T) {
			p, stdin := startFed(t, args(connect, a)...)
			_, node := tokenAndNode(t, p.heldLine(t))
			ok, _, err := c.Exists(t.Context(), node)
			require.NoError(t, err)
			assert.True(t, ok, "%s is not on the server", node)
			require.NoError(t, stdin.Close())
			r := p.wait(t, 30*time.Second)
			assert.Equal(t, 0, r.code, r.stderr)
			ok, _, err = c.Exists(t.Context(), node)
			require.NoError(t, err)
			assert.False(t, ok, "%s outlived zkr", node)
		})
	}
}

// A hold without COMMAND that is lost while held ends zkr at once with 122
// and a message: a script waiting on it learns that what it did under the
// lock may have overlapped with the next holder.
func TestLockWithoutCommandLostExits122(t *testing.T) {
	cl, _ := server(t)
	p := cl.NewProxy()
	z, _ := startFed(t, "--connect", p.ConnectString(), "--session-timeout", "2s", "lock", "/held-lost")
	z.heldLine(t)
	p.Blackhole()
	r := z.wait(t, 30*time.Second)
	assert.Equal(t, exitLost, r.code, r.stderr)
	assert.Contains(t, r.stderr, "hold lost")
	p.Heal()
}

// The manual's way for a script to hold a lock across several commands
// works as written: a coprocess holds, the script reads the token, runs
// its commands while another zkr finds the lock taken, and closing the
// coprocess's stdin releases it (status 0).
func TestScriptHoldsALockAcrossCommands(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	conn := strings.Join(connect, " ")
	script := fmt.Sprintf(`
		set -e
		coproc HOLD { zkr %[1]s lock /jobs/x; }
		read -r token node <&"${HOLD[0]}"
		echo "token=$token"
		zkr %[1]s lock -n /jobs/x -- true && echo "free?!" || echo "taken: $?"
		zkr %[1]s lock -n /jobs/x -- true && echo "free?!" || echo "taken: $?"
		exec {HOLD[1]}>&-; wait "$HOLD_PID"; echo "released: $?"
		zkr %[1]s lock -n /jobs/x -- echo free
	`, conn)
	sh := exec.Command("bash", "-c", script)
	sh.Env = append(os.Environ(), "PATH="+filepath.Dir(zkrBin)+":"+os.Getenv("PATH"),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	out, err := sh.CombinedOutput()
	require.NoError(t, err, "%s", out)
	l := lines(string(out))
	require.Len(t, l, 5, "%s", out)
	assert.Regexp(t, `^token=\d+$`, l[0])
	assert.Equal(t, []string{"taken: 1", "taken: 1", "released: 0", "free"}, l[1:])
	assert.Empty(t, children(t, c, "/jobs/x"))
}

// On a terminal, a hold without COMMAND ends with Ctrl-D (the end of its
// stdin) or Ctrl-C: released, status 0.
func TestTerminalLockWithoutCommandEndsWithCtrlDOrCtrlC(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	s := startShell(t)
	for _, key := range []string{"\x04", "\x03"} { // Ctrl-D, Ctrl-C
		m := s.mark()
		s.typeKeys("zkr " + strings.Join(connect, " ") + " lock /tty-held\n")
		s.expectAfter(m, `\n\d+ /tty-held/\S+-lock-\d+`, 30*time.Second)
		waitChildren(t, c, "/tty-held", 1)
		m = s.mark()
		s.typeKeys(key)
		// The prompt first: until it exits, zkr reads the terminal, and
		// would take what is typed ahead.
		s.expectAfter(m, `\$ $`, 30*time.Second)
		assert.Equal(t, 0, s.status(), "key %q", key)
		assert.Empty(t, children(t, c, "/tty-held"))
	}
}

// Started in the background (&) on a terminal, a hold without COMMAND is
// not stopped for reading the terminal (SIGTTIN would stop zkr, and a
// stopped zkr keeps no session alive): it keeps holding, and once brought
// to the foreground, Ctrl-D releases it.
func TestTerminalLockWithoutCommandInTheBackgroundKeepsHolding(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	s := startShell(t)
	m := s.mark()
	s.typeKeys("zkr " + strings.Join(connect, " ") + " --session-timeout 2s lock /tty-bg-held &\n")
	s.expectAfter(m, ` \d+ /tty-bg-held/\S+-lock-\d+`, 30*time.Second)
	time.Sleep(3 * time.Second) // longer than the session: a stopped zkr would have lost it
	m = s.mark()
	s.typeKeys("jobs\n")
	assert.Contains(t, s.expectAfter(m, `(?s)jobs.*\n\$ $`, 10*time.Second)[0], "Running")
	assert.Len(t, children(t, c, "/tty-bg-held"), 1, "the hold went")
	s.typeKeys("fg\n")
	time.Sleep(500 * time.Millisecond) // zkr reads the terminal again
	m = s.mark()
	s.typeKeys("\x04")
	s.expectAfter(m, `\$ $`, 30*time.Second)
	assert.Equal(t, 0, s.status())
	assert.Empty(t, children(t, c, "/tty-bg-held"))
}

// runScript runs a bash script with zkr on its PATH, bash's stdin a pipe
// that stays open (so that a /dev/null zkr reads is bash's doing), and
// returns its output.
func runScript(t *testing.T, script string) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	defer r.Close()
	sh := exec.Command("bash", "-c", script)
	sh.Stdin = r
	sh.Env = append(os.Environ(), "PATH="+filepath.Dir(zkrBin)+":"+os.Getenv("PATH"),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	out, err := sh.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// Without COMMAND, zkr holds until its stdin ends: a stdin at its end
// already (/dev/null, which a script's background job reads; an empty
// file) would take the lock and drop it at once, silently, with 0. zkr
// refuses it at start instead: 2, one line that says why, nothing sent.
func TestLockWithoutCommandRefusesAStdinAtItsEnd(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for name, a := range map[string][]string{
		"lock":  {"lock", "/ended"},
		"rlock": {"rlock", "/ended"},
		"wlock": {"wlock", "/ended"},
		"sem":   {"sem", "--max", "2", "/ended"},
	} {
		t.Run(name, func(t *testing.T) {
			r := zkr(t, args(connect, a)...) // stdin: /dev/null
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Empty(t, r.stdout, "a token printed")
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "want one line, got:\n%s", r.stderr)
			assert.Contains(t, r.stderr, "stdin is at its end")
		})
	}
	r := zkr(t, "--connect", "127.0.0.1:1", "lock", "/ended")
	assert.Equal(t, exitUsage, r.code, "refused before connecting: %s", r.stderr)

	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, touch(empty))
	conn := strings.Join(connect, " ")
	out := runScript(t, fmt.Sprintf(`
		zkr %[1]s lock /ended &
		wait $!; echo "background: $?"
		zkr %[1]s lock /ended < %[2]q; echo "empty file: $?"
		true | zkr %[1]s lock /ended; echo "closed pipe: $?"
	`, conn, empty))
	assert.Contains(t, out, "background: 2\n")
	assert.Contains(t, out, "empty file: 2\n")
	assert.Contains(t, out, "closed pipe: 2\n")
	assert.Contains(t, out, "stdin is at its end")
	ok, _, err := c.Exists(t.Context(), "/ended")
	require.NoError(t, err)
	assert.False(t, ok, "a refused zkr made its path")
}

// A stdin that ends while zkr waits (the script gave up, or its pipe was
// a closing one) means the hold would be dropped as soon as granted: zkr
// leaves the queue instead, prints no token, and exits 2 saying why.
func TestLockWithoutCommandLeavesTheQueueWhenStdinEndsFirst(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	m, err := mutex.New(c, "/busy-held")
	require.NoError(t, err)
	holdMutex(t, m)
	p, stdin := startFed(t, args(connect, cmd("lock", "/busy-held"))...)
	waitChildren(t, c, "/busy-held", 2)
	require.NoError(t, stdin.Close())
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Empty(t, r.stdout, "a token printed")
	assert.Contains(t, r.stderr, "stdin ended before /busy-held was granted")
	assert.Len(t, children(t, c, "/busy-held"), 1, "zkr's node is still queued")
}
