package zktest

import (
	"testing"

	"go.uber.org/goleak"

	harness "github.com/zkrecipes/zkrecipes/internal/zktest"
)

// Main is a TestMain for a package whose runnable Examples need a server
// (an Example has no *testing.T to start one with):
//
//	func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }
//
// It starts one standalone server for the package, configured by opts,
// runs the tests and Examples, stops the server, and fails the run if a
// goroutine outlived the tests (goleak). It sets ZK_SERVERS to the
// server's addresses through the shared proxy, comma-separated, where an
// Example can read them as a service reads its configuration. Tests
// should still start servers of their own, so that their faults stay
// theirs.
func Main(m *testing.M, opts ...Option) int {
	return harness.MainWith(m, leakOptions, harnessOptions(opts)...)
}

// leakOptions leaves out of Main's leak check the goroutine that holds
// testcontainers-go's connection to its reaper (Ryuk), which lives as long
// as the test process so that the reaper removes the containers when the
// process dies.
var leakOptions = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/testcontainers/testcontainers-go.(*Reaper).connect.func1"),
}

// MainCluster returns the server Main started, for an Example that injects
// a fault. Since an Example has no test to fail, a fault the kit cannot
// inject ends the whole run with exit status 2.
func MainCluster() *Cluster {
	c := harness.MainCluster()
	return &Cluster{c: c, t: c.TB()}
}
