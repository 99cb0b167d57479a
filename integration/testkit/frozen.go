package testkit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
)

// Proc is a helper process a test talks to: it writes lines to the
// process's stdin and reads the lines it prints, and can freeze it
// (SIGSTOP) and thaw it (SIGCONT) as a long GC pause, a paused VM or a
// debugger would.
type Proc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

// StartProc runs the test binary again as a helper, with env=spec in its
// environment (its TestMain sees it and runs the helper instead of the
// tests), and kills it when t ends.
func StartProc(t testing.TB, env, spec string) *Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+spec)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &Proc{cmd: cmd, in: in, lines: make(chan string, 64)}
	go func() {
		defer close(p.lines)
		r := bufio.NewReader(out)
		for {
			l, err := r.ReadString('\n')
			if l != "" {
				p.lines <- strings.TrimSpace(l)
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies of SIGKILL too, but not before it runs
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

// Expect waits for the process's next line, which must begin with prefix,
// and returns it.
func (p *Proc) Expect(t testing.TB, prefix string, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		require.True(t, ok, "helper process ended before saying %q", prefix)
		require.True(t, strings.HasPrefix(l, prefix), "helper process said %q, want %q", l, prefix)
		return l
	case <-time.After(timeout):
		t.Fatalf("helper process did not say %q within %v", prefix, timeout)
		return ""
	}
}

// Say writes line to the process's stdin: a stopped process finds it
// there the moment it is thawed.
func (p *Proc) Say(t testing.TB, line string) {
	t.Helper()
	_, err := io.WriteString(p.in, line+"\n")
	require.NoError(t, err)
}

// Freeze stops the process (SIGSTOP): none of its goroutines runs, its
// sockets fill, its pings stop, until Thaw.
func (p *Proc) Freeze(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGSTOP))
}

// Thaw lets a frozen process run on (SIGCONT).
func (p *Proc) Thaw(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGCONT))
}

// stdin is the helper's stdin, read a line at a time by ReadLine.
var stdin = bufio.NewReader(os.Stdin)

// ReadLine is the helper's side of Say: the next line of its stdin.
func ReadLine() string {
	l, _ := stdin.ReadString('\n')
	return strings.TrimSpace(l)
}

// ChildDial is a helper process's client: it dials addrs (comma-separated)
// with the session timeout sessionTimeout (a duration's text), and on
// failure says "error ..." on stdout, which the test reads, and exits.
func ChildDial(addrs, sessionTimeout string) *framework.Client {
	timeout, _ := time.ParseDuration(sessionTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, strings.Split(addrs, ","), framework.WithSessionTimeout(timeout))
	ChildCheck(err)
	return c
}

// ChildCheck ends a helper process that met err, saying "error ..." on
// stdout.
func ChildCheck(err error) {
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
}
