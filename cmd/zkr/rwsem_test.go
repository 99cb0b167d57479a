package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Readers share: the first reader's COMMAND waits for a file that only the
// second reader's COMMAND makes, so both finish only if both hold at once.
func TestRLockHoldersShare(t *testing.T) {
	_, connect := server(t)
	both := filepath.Join(t.TempDir(), "both")
	first := start(t, args(connect, cmd("rlock", "/rw"), sh("echo ready; "+waitFile(both)))...)
	first.expectLine(t, "ready")
	second := zkr(t, args(connect, cmd("rlock", "--timeout", "20s", "/rw"), sh("touch "+both))...)
	assert.Equal(t, 0, second.code, second.stderr)
	assert.Equal(t, 0, first.wait(t, 30*time.Second).code)
}

func TestWLockWaitsForReaders(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	done := filepath.Join(t.TempDir(), "done")
	reader := start(t, args(connect, cmd("rlock", "/rw"), sh("echo ready; "+waitFile(done)))...)
	reader.expectLine(t, "ready")

	r := zkr(t, args(connect, cmd("wlock", "--timeout", "500ms", "/rw"), sh("echo ran"))...)
	assert.Equal(t, exitTimeout, r.code, r.stderr)
	assert.Empty(t, r.stdout)

	writer := start(t, args(connect, cmd("wlock", "/rw"), sh("echo writing"))...)
	waitChildren(t, c, "/rw", 2) // the writer queues behind the reader
	require.NoError(t, touch(done))
	assert.Equal(t, 0, reader.wait(t, 30*time.Second).code)
	writer.expectLine(t, "writing")
	assert.Equal(t, 0, writer.wait(t, 30*time.Second).code)
}

func TestRLockWaitsForWriter(t *testing.T) {
	_, connect := server(t)
	done := filepath.Join(t.TempDir(), "done")
	writer := start(t, args(connect, cmd("wlock", "/rw"), sh("echo ready; "+waitFile(done)))...)
	writer.expectLine(t, "ready")

	r := zkr(t, args(connect, cmd("rlock", "--timeout", "500ms", "/rw"), sh("echo ran"))...)
	assert.Equal(t, exitTimeout, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	require.NoError(t, touch(done))
	assert.Equal(t, 0, writer.wait(t, 30*time.Second).code)
}

func TestSemAdmitsMaxHolders(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	dir := t.TempDir()
	two, done := filepath.Join(dir, "two"), filepath.Join(dir, "done")
	first := start(t, args(connect, cmd("sem", "--max", "2", "/pool"), sh("echo ready; "+waitFile(two)+"; "+waitFile(done)))...)
	first.expectLine(t, "ready")
	second := start(t, args(connect, cmd("sem", "--max", "2", "/pool"), sh("touch "+two+"; echo ready; "+waitFile(done)))...)
	second.expectLine(t, "ready")

	r := zkr(t, args(connect, cmd("sem", "--max", "2", "--timeout", "500ms", "/pool"), sh("echo ran"))...)
	assert.Equal(t, exitTimeout, r.code, "a third holder of a semaphore of 2: %s", r.stderr)
	assert.Empty(t, r.stdout)
	// The one that timed out left nothing: neither a lease nor its place
	// in the internal lock.
	waitChildren(t, c, "/pool/leases", 2)
	waitChildren(t, c, "/pool/locks", 0)

	require.NoError(t, touch(done))
	assert.Equal(t, 0, first.wait(t, 30*time.Second).code)
	assert.Equal(t, 0, second.wait(t, 30*time.Second).code)
	r = zkr(t, args(connect, cmd("sem", "--max", "2", "--timeout", "20s", "/pool"), sh(`echo $ZKR_FENCING_TOKEN`))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^[1-9][0-9]*\n$`, r.stdout)
}

func touch(f string) error { return os.WriteFile(f, nil, 0o644) }
