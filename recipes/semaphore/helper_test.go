package semaphore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// The tests re-run their own binary as a lease holder so that kill -9 hits a
// real process. runHelper is called from TestMain; it returns true if this
// process is such a helper (it then never returns: it holds until killed).
const helperEnv = "ZKRECIPES_SEMAPHORE_HELPER"

func runHelper() bool {
	spec := os.Getenv(helperEnv) // "addrs|path|max|sessionTimeout"
	if spec == "" {
		return false
	}
	parts := strings.Split(spec, "|")
	max, _ := strconv.Atoi(parts[2])
	timeout, _ := time.ParseDuration(parts[3])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, strings.Split(parts[0], ","), framework.WithSessionTimeout(timeout))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	s, err := semaphore.New(c, parts[1], max)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	leases, err := s.Acquire(ctx, 1)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Printf("held %d\n", leases[0].Token())
	select {} // until killed
}

// startHolder starts a helper process that takes one lease of the semaphore
// at path and returns once it holds it.
func startHolder(t *testing.T, addrs []string, path string, max int, sessionTimeout time.Duration) *exec.Cmd {
	t.Helper()
	return testkit.Child(t, helperEnv, testkit.ChildSpec(strings.Join(addrs, ","), path, max, sessionTimeout), "held ")
}

// setCount writes n to the SharedCount node at path, as an operator's
// shared.Count does (making it if need be).
func setCount(ctx context.Context, c *framework.Client, path string, n int32) error {
	count, err := shared.NewCount(c, path, n)
	if err != nil {
		return err
	}
	defer count.Close()
	if err := count.Start(ctx); err != nil {
		return err
	}
	_, err = count.Set(ctx, n)
	return err
}
