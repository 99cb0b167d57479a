package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// The tests run the real zkr binary, built once by TestMain, against real
// servers: exit statuses, signals and process groups are what is under test,
// and only a separate process has them.

var zkrBin string

func TestMain(m *testing.M) {
	os.Exit(testkit.MainWithBinary(m, "zkr", &zkrBin))
}

// result is how one zkr run ended.
type result struct {
	code           int
	stdout, stderr string
}

// zkr runs the binary to completion (at most a minute).
func zkr(t *testing.T, args ...string) result {
	t.Helper()
	p := start(t, args...)
	return p.wait(t, time.Minute)
}

// proc is a zkr running in the background.
type proc struct {
	cmd    *exec.Cmd
	lines  chan string // stdout, line by line
	stdout testkit.SyncBuffer
	stderr testkit.SyncBuffer
	done   chan struct{}
	res    result
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startWith(t, nil, args...)
}

// startWith is start with env added to the environment.
func startWith(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return startAttr(t, env, nil, args...)
}

// startJob is start with zkr in a process group of its own, as a shell
// starts a job: what zkr does to its own group stays there.
func startJob(t *testing.T, args ...string) *proc {
	t.Helper()
	return startAttr(t, nil, &syscall.SysProcAttr{Setpgid: true}, args...)
}

func startAttr(t *testing.T, env []string, attr *syscall.SysProcAttr, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(zkrBin, args...)
	cmd.SysProcAttr = attr
	// A race-enabled zkr would sleep a second at exit; a race it finds
	// still fails the test with its status (66) and report.
	cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Env = append(cmd.Env, env...)
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
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for zkr to exit.
func (p *proc) wait(t *testing.T, timeout time.Duration) result {
	t.Helper()
	select {
	case <-p.done:
		return p.res
	case <-time.After(timeout):
		t.Fatalf("zkr %v still running after %v; stderr:\n%s", p.cmd.Args[1:], timeout, p.stderr.String())
		return result{}
	}
}

// expectLine waits for the next stdout line and checks it.
func (p *proc) expectLine(t *testing.T, want string) {
	t.Helper()
	select {
	case l := <-p.lines:
		require.Equal(t, want, l, "stderr:\n%s", p.stderr.String())
	case <-p.done:
		// A process that printed its line and exited makes both cases
		// ready, and select picks at random: the line still counts.
		select {
		case l := <-p.lines:
			require.Equal(t, want, l, "stderr:\n%s", p.stderr.String())
		default:
			t.Fatalf("zkr exited %d before printing %q; stderr:\n%s", p.res.code, want, p.res.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no %q from zkr after 30s; stderr:\n%s", want, p.stderr.String())
	}
}

func (p *proc) signal(t *testing.T, s os.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(s))
}

// server starts a server for t and returns it with the --connect option
// that reaches it.
func server(t *testing.T, opts ...zktest.Option) (*zktest.Cluster, []string) {
	t.Helper()
	cl := zktest.Standalone(t, opts...)
	return cl, []string{"--connect", cl.ConnectString()}
}

// client is an in-test session on cl, to look at what zkr left behind and
// to hold locks against it.
func client(t *testing.T, cl *zktest.Cluster) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, cl.Addrs(), framework.WithSessionTimeout(4*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

var (
	children     = testkit.Children
	waitChildren = testkit.WaitChildren
)

// args joins argument lists.
func args(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func cmd(argv ...string) []string { return argv }

// sh is a COMMAND: sh -c script.
func sh(script string) []string { return []string{"--", "sh", "-c", script} }

// waitFile is a shell loop that waits for file f (polling: sh cannot block
// on a file appearing).
func waitFile(f string) string {
	return fmt.Sprintf(`while [ ! -e %q ]; do sleep 0.05; done`, f)
}

func lines(s string) []string {
	return strings.Split(strings.TrimRight(s, "\n"), "\n")
}
