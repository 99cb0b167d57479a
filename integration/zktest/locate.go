package zktest

import (
	"context"
	"os"
	"testing"

	"github.com/zkrecipes/zkrecipes/integration/zkserver"
)

// InstallHint is the command that installs what the harness needs on the
// Debian machines this project is built on.
const InstallHint = zkserver.InstallHint

// backend is where the servers for this run come from.
type backend int

const (
	backendLocal backend = iota + 1
	backendExternal
	backendDocker
)

// locate decides, once per call, which backend serves a test. It never skips:
// with nothing usable it fails the test with the install command.
func locate(t testing.TB) (backend, *zkserver.Install) {
	t.Helper()
	if os.Getenv("ZK_CONNECT") != "" {
		return backendExternal, nil
	}
	in, err := zkserver.Locate()
	if err == nil {
		return backendLocal, in
	}
	if os.Getenv("ZK_HOME") != "" {
		// A ZK_HOME that does not work is a mistake the user wants to hear about,
		// not something to paper over with Docker.
		t.Fatalf("zktest: ZK_HOME is set but unusable: %v", err)
	}
	if dockerAnswers(context.Background()) {
		return backendDocker, nil
	}
	t.Fatalf("zktest: no ZooKeeper server available: no ZK_CONNECT, no local install (%v), no Docker daemon.\n  install one with: %s", err, InstallHint)
	return 0, nil
}
