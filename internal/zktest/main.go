package zktest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

var (
	mainMu      sync.Mutex
	mainCluster *Cluster
)

// Main is a TestMain for packages whose runnable Examples need a server: it
// starts one standalone server for the whole package (MainAddrs), runs the
// tests and examples, stops the server, and then fails the run if any
// goroutine is left (goleak). Use it as
//
//	func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }
//
// Tests should still start their own servers; the shared one is for
// examples, which have no *testing.T. Main sets the environment variable
// ZK_SERVERS to its server's addresses (comma-separated), which is where
// the examples read them from, as a service would read its configuration:
// an example's code works as it is shown, against any ZooKeeper.
func Main(m *testing.M) int { return MainWith(m, nil) }

// MainWith is Main whose shared server is started with opts, and whose
// leak check takes leak: the test kit passes its container backend, and
// leaves out the goroutine testcontainers-go keeps for the process's life.
func MainWith(m *testing.M, leak []goleak.Option, opts ...Option) int {
	tb := &mainTB{}
	code := func() (code int) {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(mainFatal); !ok {
					panic(r)
				}
				code = 2
			}
			tb.cleanup()
		}()
		c := Standalone(tb, opts...)
		mainMu.Lock()
		mainCluster = c
		mainMu.Unlock()
		if err := os.Setenv("ZK_SERVERS", strings.Join(c.Addrs(), ",")); err != nil {
			tb.Fatalf("zktest: %v", err)
		}
		return m.Run()
	}()
	if code == 0 {
		if err := goleak.Find(leak...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			return 1
		}
	}
	return code
}

// MainAddrs returns the client addresses of the server Main started.
func MainAddrs() []string {
	mainMu.Lock()
	defer mainMu.Unlock()
	if mainCluster == nil {
		panic("zktest: MainAddrs without zktest.Main in TestMain")
	}
	return mainCluster.Addrs()
}

// MainCluster returns the server Main started. Its failures (a fault
// that cannot be injected, say) end the run with exit status 2.
func MainCluster() *Cluster {
	mainMu.Lock()
	defer mainMu.Unlock()
	if mainCluster == nil {
		panic("zktest: MainCluster without zktest.Main in TestMain")
	}
	return mainCluster
}

type mainFatal struct{}

// mainTB is the testing.TB of Main's own server, which lives outside any
// test. The embedded interface is never called; it only supplies the
// unexported method testing.TB requires.
type mainTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

func (*mainTB) Helper()                         {}
func (*mainTB) Name() string                    { return "zktest.Main" }
func (*mainTB) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (tb *mainTB) Failed() bool {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.failed
}

func (tb *mainTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "zktest.Main: "+format+"\n", args...)
	tb.mu.Lock()
	tb.failed = true
	tb.mu.Unlock()
	panic(mainFatal{})
}

func (tb *mainTB) Skipf(format string, args ...any) {
	tb.Fatalf("cannot skip in TestMain: "+format, args...)
}

func (tb *mainTB) TempDir() string {
	d, err := os.MkdirTemp("", "zktest-main-")
	if err != nil {
		tb.Fatalf("temp dir: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func (tb *mainTB) Cleanup(f func()) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.cleanups = append(tb.cleanups, f)
}

func (tb *mainTB) cleanup() {
	tb.mu.Lock()
	fs := tb.cleanups
	tb.cleanups = nil
	tb.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
