package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// SIGQUIT is treated as SIGTERM: while waiting, zkr leaves the queue (its
// node deleted at once) and exits 128+3. Before, Go's default handler
// printed a stack dump, exited 2 (the usage code) and left the node to the
// session timeout.
func TestSIGQUITWhileWaitingLeavesTheQueueAndExits131(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	holdMutex(t, newMutex(t, c, "/quit", "holder"))
	for _, sub := range [][]string{{"lock", "/quit"}, {"elect", "/quit"}} {
		t.Run(sub[0], func(t *testing.T) {
			p := start(t, args(connect, cmd("--session-timeout", "30s"), sub, sh("echo ran"))...)
			waitChildren(t, c, "/quit", 2)
			p.signal(t, syscall.SIGQUIT)
			r := p.wait(t, 30*time.Second)
			assert.Equal(t, 128+int(syscall.SIGQUIT), r.code, r.stderr)
			assert.False(t, strings.Contains(r.stderr, "goroutine "), "a stack dump: %.200q", r.stderr)
			assert.Empty(t, r.stdout)
			// At once, not after the 30 s session timeout.
			assert.Len(t, children(t, c, "/quit"), 1, "the waiter's node outlived it")
		})
	}
}

// SIGQUIT while COMMAND runs goes to COMMAND, as SIGTERM does, and zkr
// exits with COMMAND's status once it has released.
func TestSIGQUITIsForwardedToCommand(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	got := filepath.Join(t.TempDir(), "got")
	p := start(t, args(connect, cmd("lock", "/quit-fwd"),
		sh(`trap 'echo QUIT > `+got+`; exit 5' QUIT; echo ready; while :; do sleep 0.1; done`))...)
	p.expectLine(t, "ready")
	p.signal(t, syscall.SIGQUIT)
	r := p.wait(t, 30*time.Second)
	assert.Equal(t, 5, r.code, "zkr exits with COMMAND's status: %s", r.stderr)
	b, _ := os.ReadFile(got)
	assert.Equal(t, "QUIT\n", string(b), "COMMAND did not get the signal")
	assert.Empty(t, children(t, c, "/quit-fwd"))
}

// Ctrl-\ on the terminal while zkr waits reaches zkr (COMMAND has not
// started): it leaves the queue and exits 131, with no stack dump on the
// screen.
func TestTerminalCtrlBackslashWhileWaitingLeavesTheQueue(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	holdMutex(t, newMutex(t, c, "/tty-quit", "holder"))
	s := startShell(t)
	m := s.mark()
	s.typeKeys("zkr " + strings.Join(connect, " ") + " --session-timeout 30s lock /tty-quit -- echo ran\n")
	waitChildren(t, c, "/tty-quit", 2)
	s.typeKeys("\x1c") // Ctrl-\
	assert.Equal(t, 128+int(syscall.SIGQUIT), s.status())
	assert.False(t, strings.Contains(s.screen()[m:], "goroutine "), "a stack dump on the screen")
	assert.Len(t, children(t, c, "/tty-quit"), 1, "the waiter's node outlived it")
}
