package testkit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// MainWithBinary is a TestMain for tests that run a command as a user
// does: it builds the package in the current directory once, as name in a
// temporary directory (with -race when the tests run under it, so the
// command's own goroutines are checked too), sets *bin to its path, runs
// the tests, and fails a passing run that left goroutines behind. It
// returns the exit code for os.Exit.
func MainWithBinary(m *testing.M, name string, bin *string) int {
	dir, err := os.MkdirTemp("", name+"-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, name)
	args := []string{"build", "-o", *bin}
	if RaceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", name, err, out)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			return 1
		}
	}
	return code
}

// SyncBuffer is a bytes.Buffer a command's output goroutine writes while
// a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
