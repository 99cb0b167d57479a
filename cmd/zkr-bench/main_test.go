package main

import (
	"context"
	"errors"
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

// The tests run the real zkr-bench binary, built once by TestMain, against
// real servers: its line on stdout, its exit statuses and signals are what
// other tools (make bench-peers) rely on.

var benchBin string

func TestMain(m *testing.M) {
	os.Exit(testkit.MainWithBinary(m, "zkr-bench", &benchBin))
}

// result is how one zkr-bench run ended.
type result struct {
	code           int
	stdout, stderr string
}

// proc is a zkr-bench running in the background.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr testkit.SyncBuffer
	done           chan struct{}
	res            result
}

// startWith starts zkr-bench with args, env added to the environment.
func startWith(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(benchBin, args...)
	// A race-enabled binary would sleep a second at exit; a race it finds
	// still fails the test with its status (66) and report.
	cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Env = append(cmd.Env, env...)
	p := &proc{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.stdout, &p.stderr
	require.NoError(t, cmd.Start())
	go func() {
		defer close(p.done)
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

// wait waits for zkr-bench to exit.
func (p *proc) wait(t *testing.T, timeout time.Duration) result {
	t.Helper()
	select {
	case <-p.done:
		return p.res
	case <-time.After(timeout):
		t.Fatalf("zkr-bench %v still running after %v; stderr:\n%s", p.cmd.Args[1:], timeout, p.stderr.String())
		return result{}
	}
}

// zkrBench runs the binary to completion (at most two minutes).
func zkrBench(t *testing.T, args ...string) result {
	t.Helper()
	return startWith(t, nil, args...).wait(t, 2*time.Minute)
}

// server starts a server for t and returns it with the --connect option
// that reaches it.
func server(t *testing.T) (*zktest.Cluster, []string) {
	t.Helper()
	cl := zktest.Standalone(t)
	return cl, []string{"--connect", cl.ConnectString()}
}

// client is an in-test session on cl, to look at what zkr-bench left
// behind.
func client(t *testing.T, cl *zktest.Cluster) *framework.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, cl.Addrs(), framework.WithSessionTimeout(4*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

var children = testkit.Children

// args joins argument lists.
func args(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func cmd(argv ...string) []string { return argv }
