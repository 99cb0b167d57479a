package curator_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/curator"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// Leaked reader goroutines would show here: zktest.Main runs goleak.
func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

// The protocol itself: answers, errors, reentrancy on one name, quit.
func TestAgentProtocol(t *testing.T) {
	cl := zktest.Standalone(t)
	p := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)

	if got := p.Call(t, "participants /none", "participants", 10*time.Second); got != "participants" {
		t.Fatalf("empty lock directory: %q", got)
	}
	if got := p.Call(t, "no-such-command x", "error", 10*time.Second); !strings.Contains(got, "unknown command") {
		t.Fatalf("unknown command: %q", got)
	}
	if got := p.Call(t, "mutex-acquire a", "error", 10*time.Second); !strings.Contains(got, "usage") {
		t.Fatalf("wrong arity: %q", got)
	}
	if got := p.Call(t, "mutex-release nobody", "error", 10*time.Second); !strings.Contains(got, "mutex-release nobody") {
		t.Fatalf("release without acquire: %q", got)
	}

	first := p.Call(t, "mutex-acquire a /locks/p", "acquired a ", 10*time.Second)
	// Curator's mutex is reentrant per thread: the same name acquires again
	// at once, on the same node.
	if again := p.Call(t, "mutex-acquire a /locks/p", "acquired a ", 10*time.Second); again != first {
		t.Fatalf("reentrant acquire: %q, then %q", first, again)
	}
	if got := p.Call(t, "mutex-acquire a /locks/other", "error", 10*time.Second); !strings.Contains(got, "mutex-acquire a") {
		t.Fatalf("one name, two paths: %q", got)
	}
	p.Call(t, "mutex-release a", "released a", 10*time.Second)
	p.Call(t, "mutex-release a", "released a", 10*time.Second)
	p.Call(t, "quit", "bye", 10*time.Second)
}

// A killed Agent makes Expect fail rather than hang; Cleanup still reaps it.
func TestKilledAgentEndsItsOutput(t *testing.T) {
	cl := zktest.Standalone(t)
	p := curator.Agent(t).Start(t, cl.ConnectString(), 10*time.Second)
	p.Kill()
	p.Send("participants /x") // a write to a dead process is recorded, not fatal
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		p.Expect(ft, "participants", 30*time.Second)
	}()
	<-done
	if !strings.Contains(ft.msg, "stdout ended") {
		t.Fatalf("Expect after Kill: %q", ft.msg)
	}
}

// fatalRecorder records Fatalf instead of failing the real test; it panics
// to stop the caller as FailNow would.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = strings.TrimSpace(fmt.Sprintf(format, args...))
	panic(f)
}
