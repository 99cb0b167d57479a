package zktest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zkserver"
)

// InstallHint is the command that installs what the harness needs on the
// Debian machines this project is built on.
const InstallHint = zkserver.InstallHint

// backend is where the servers for this run come from.
type backend int

const (
	backendLocal backend = iota + 1
	backendExternal
	backendContainer
)

// locate decides, once per call, which backend serves a test. It never skips:
// with nothing usable it fails the test with the install command.
func locate(t testing.TB, cfg *config) (backend, *zkserver.Install) {
	t.Helper()
	if os.Getenv("ZK_CONNECT") != "" {
		return backendExternal, nil
	}
	if cfg.containersFirst {
		if cfg.containers == nil {
			t.Fatalf("zktest: containers asked for, but no container backend given (WithContainers)")
		}
		if err := containersAnswer(cfg.containers); err != nil {
			t.Fatalf("zktest: containers asked for, but the engine does not answer: %v", err)
		}
		return backendContainer, nil
	}
	in, err := zkserver.Locate()
	if err == nil {
		return backendLocal, in
	}
	if os.Getenv("ZK_HOME") != "" {
		// A ZK_HOME that does not work is a mistake the user wants to hear about,
		// not something to paper over with a container.
		t.Fatalf("zktest: ZK_HOME is set but unusable: %v", err)
	}
	why := "no container backend"
	if cfg.containers != nil {
		cerr := containersAnswer(cfg.containers)
		if cerr == nil {
			return backendContainer, nil
		}
		why = "no container engine (" + cerr.Error() + ")"
	}
	t.Fatalf("zktest: no ZooKeeper server available: no ZK_CONNECT, no local install (%v), %s.\n  install one with: %s", err, why, InstallHint)
	return 0, nil
}

// containersAnswer asks the container engine, giving it a few seconds:
// long enough for a local daemon, short enough that a machine without one
// fails fast.
func containersAnswer(c Containers) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Available(ctx)
}
