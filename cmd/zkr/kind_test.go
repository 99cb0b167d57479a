package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// kindPaths holds one path of each kind on c: a mutex, a read lock, a
// semaphore lease and a leader latch, each held until the test ends.
func kindPaths(t *testing.T, c *framework.Client) {
	t.Helper()
	m, err := mutex.New(c, "/k/mutex", mutex.WithParticipantID("locker"))
	require.NoError(t, err)
	holdMutex(t, m)
	rw, err := rwlock.New(c, "/k/rw", rwlock.WithParticipantID("reader"))
	require.NoError(t, err)
	t.Cleanup(func() { rw.Close() })
	_, err = rw.ReadLock().Acquire(testCtx(t))
	require.NoError(t, err)
	s, err := semaphore.New(c, "/k/sem", 3, semaphore.WithParticipantID("leaser"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = s.Acquire(testCtx(t), 1)
	require.NoError(t, err)
	l := startLatch(t, c, "/k/latch", "latched")
	awaitTerm(t, l)
}

// Locks of different kinds on one path do not exclude each other (in
// Curator neither): a zkr lock beside a semaphore's leases would run
// COMMAND while the leases are held. zkr knows the kind it takes and
// refuses a path that holds nodes of another, with 2 and the reason,
// before it queues: COMMAND does not run and no node is left. (It ran.)
func TestHoldsRefuseAPathInUseByAnotherKind(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	kindPaths(t, c)
	before := map[string][]string{}
	for _, p := range []string{"/k/mutex", "/k/rw", "/k/sem", "/k/latch"} {
		before[p] = children(t, c, p)
	}
	for name, tc := range map[string]struct {
		argv []string
		held string // the other kind, as the message names it
	}{
		"lock on a semaphore":     {cmd("lock", "/k/sem"), "semaphore"},
		"lock on a rwlock":        {cmd("lock", "/k/rw"), "rwlock"},
		"lock on a latch":         {cmd("lock", "/k/latch"), "latch"},
		"rlock on a mutex":        {cmd("rlock", "/k/mutex"), "lock"},
		"wlock on a semaphore":    {cmd("wlock", "/k/sem"), "semaphore"},
		"sem on a mutex":          {cmd("sem", "--max", "2", "/k/mutex"), "lock"},
		"sem on a rwlock":         {cmd("sem", "--max", "2", "/k/rw"), "rwlock"},
		"elect on a latch":        {cmd("elect", "/k/latch"), "latch"},
		"elect on a semaphore":    {cmd("elect", "/k/sem"), "semaphore"},
		"-n lock on a semaphore":  {cmd("lock", "-n", "/k/sem"), "semaphore"},
		"timed lock on a rwlock":  {cmd("lock", "--timeout", "5s", "/k/rw"), "rwlock"},
		"rlock on a latch":        {cmd("rlock", "/k/latch"), "latch"},
		"sem on a latch":          {cmd("sem", "--max", "1", "/k/latch"), "latch"},
		"wlock on a mutex":        {cmd("wlock", "/k/mutex"), "lock"},
		"elect on a rwlock":       {cmd("elect", "/k/rw"), "rwlock"},
		"lock on a semaphore, -v": {cmd("lock", "-v", "/k/sem"), "semaphore"},
	} {
		t.Run(name, func(t *testing.T) {
			r := start(t, args(connect, tc.argv, sh("echo ran"))...).wait(t, 30*time.Second)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Empty(t, r.stdout, "COMMAND ran")
			path := tc.argv[len(tc.argv)-1]
			assert.Contains(t, r.stderr, path+" holds "+tc.held+" nodes")
			assert.Contains(t, r.stderr, "--any-kind")
			// The server may remove a semaphore's empty locks/ meanwhile
			// (a container): nothing is new, is what counts.
			assert.Subset(t, before[path], children(t, c, path), "zkr left a node")
		})
	}
}

// The same kind queues as always: zkr lock -n on a held mutex is busy
// (1), zkr rlock beside a reader holds at once.
func TestHoldsOfTheSameKindQueueAsBefore(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	kindPaths(t, c)
	r := zkr(t, args(connect, cmd("lock", "-n", "/k/mutex"), sh("echo ran"))...)
	assert.Equal(t, 1, r.code, r.stderr)
	r = zkr(t, args(connect, cmd("rlock", "/k/rw"), sh("echo ran"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ran\n", r.stdout)
	r = zkr(t, args(connect, cmd("sem", "--max", "3", "/k/sem"), sh("echo ran"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ran\n", r.stdout)
}

// --any-kind queues beside another kind, as Curator would: for a path
// that only looks like another kind's (a directory named locks that holds
// lock paths of its own).
func TestAnyKindQueuesBesideAnotherKind(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	kindPaths(t, c)
	r := zkr(t, args(connect, cmd("lock", "--any-kind", "/k/sem"), sh("echo ran"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ran\n", r.stdout)
	r = zkr(t, args(connect, cmd("elect", "--any-kind", "/k/latch"), sh("echo ran"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ran\n", r.stdout)
}

// A semaphore's directories with nothing in them are what a finished
// semaphore leaves (until the server removes the containers), not
// semaphore nodes: a lock there runs.
func TestEmptySemaphoreDirectoriesDoNotStopALock(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for _, p := range []string{"/left/leases", "/left/locks"} {
		_, err := c.Create(testCtx(t), p, nil, framework.WithParents())
		require.NoError(t, err)
	}
	r := zkr(t, args(connect, cmd("lock", "/left"), sh("echo ran"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ran\n", r.stdout)
	assert.False(t, strings.Contains(r.stderr, "holds"), r.stderr)
}
