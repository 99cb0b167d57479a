package mutex_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// The tests re-run their own binary as a lock holder so that kill -9 hits a
// real process. runHelper is called from TestMain; it returns true if this
// process is such a helper (it then never returns: it holds until killed).
const helperEnv = "ZKRECIPES_MUTEX_HELPER"

func runHelper() bool {
	spec := os.Getenv(helperEnv) // "addrs|path|sessionTimeout"
	if spec == "" {
		return false
	}
	parts := strings.Split(spec, "|")
	timeout, _ := time.ParseDuration(parts[2])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, strings.Split(parts[0], ","), framework.WithSessionTimeout(timeout))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	m, err := mutex.New(c, parts[1])
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	h, err := m.Acquire(ctx)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Printf("held %d\n", h.Token())
	select {} // until killed
}

// startHolder starts a helper process that takes the mutex at path and
// returns once it holds it.
func startHolder(t *testing.T, addrs []string, path string, sessionTimeout time.Duration) *exec.Cmd {
	t.Helper()
	return testkit.Child(t, helperEnv, testkit.ChildSpec(strings.Join(addrs, ","), path, sessionTimeout), "held ")
}
