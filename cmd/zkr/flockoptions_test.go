package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
)

// -w/--timeout take flock's plain seconds, fractions included, as well as
// Go durations: a busy lock ends zkr with 124 at about that time. Before,
// --timeout 1 was a parse error.
func TestTimeoutTakesFlockSecondsOrADuration(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	holdMutex(t, newMutex(t, c, "/busy-w", "holder"))
	for _, w := range [][]string{{"-w", "1"}, {"--timeout", "0.5"}, {"-w", "700ms"}, {"--timeout=1.5"}} {
		t.Run(w[0], func(t *testing.T) {
			started := time.Now()
			r := zkr(t, args(connect, cmd("lock"), w, cmd("/busy-w", "--", "echo", "ran"))...)
			assert.Equal(t, exitTimeout, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, "timed out")
			assert.Less(t, time.Since(started), 20*time.Second)
			assert.Len(t, children(t, c, "/busy-w"), 1, "only the holder's node may remain")
		})
	}
}

// -w 0 is -n, as in flock: a busy lock is not waited for, and zkr exits
// with the conflict exit code, which -E sets as flock's -E does. elect
// takes them too: a mutex holder on its path is its leader.
func TestTimeoutZeroIsNonblockAndEIsTheConflictCode(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	holdMutex(t, newMutex(t, c, "/busy-w0", "holder"))
	l, err := rwlock.New(c, "/busy-w0-rw")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	_, err = l.ReadLock().Acquire(t.Context())
	require.NoError(t, err)
	for _, tc := range []struct {
		sub, path string
		opts      []string
		want      int
	}{
		{"lock", "/busy-w0", []string{"-w", "0"}, 1},
		{"lock", "/busy-w0", []string{"--timeout", "0s"}, 1},
		{"lock", "/busy-w0", []string{"-n", "-E", "7"}, 7},
		{"lock", "/busy-w0", []string{"-w", "0", "-E", "7"}, 7},
		{"lock", "/busy-w0", []string{"-n", "--conflict-exit-code", "7"}, 7},
		{"elect", "/busy-w0", []string{"-w", "0"}, 1},
		{"elect", "/busy-w0", []string{"-n", "-E", "7"}, 7},
		{"wlock", "/busy-w0-rw", []string{"-w", "0", "-E", "9"}, 9},
	} {
		t.Run(tc.sub+" "+strings.Join(tc.opts, " "), func(t *testing.T) {
			before := children(t, c, tc.path)
			started := time.Now()
			r := zkr(t, args(connect, cmd(tc.sub), tc.opts, cmd(tc.path, "--", "echo", "ran"))...)
			assert.Equal(t, tc.want, r.code, r.stderr)
			assert.Empty(t, r.stdout, "COMMAND ran")
			assert.Less(t, time.Since(started), 15*time.Second, "it waited")
			assert.ElementsMatch(t, before, children(t, c, tc.path), "it left a node")
		})
	}
	// Free: -w 0 takes it at once and runs COMMAND.
	r := zkr(t, args(connect, cmd("lock", "-w", "0", "/free-w0", "--", "echo", "ran"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ran\n", r.stdout)
	r = zkr(t, args(connect, cmd("elect", "-n", "/free-w0", "--", "echo", "led"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "led\n", r.stdout)
}

// -c runs a command line with /bin/sh, as flock -c does, before or after
// PATH, with the hold's environment.
func TestCommandLineRunsThroughSh(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	r := zkr(t, args(connect, cmd("lock", "/shc", "-c", `echo "$ZKR_LOCK_PATH" | tr a-z A-Z; exit 3`))...)
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Equal(t, "/SHC\n", r.stdout)
	r = zkr(t, args(connect, cmd("sem", "--max", "1", "--command", `test -n "$ZKR_FENCING_TOKEN" && echo token`, "/shc-sem"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "token\n", r.stdout)
	r = zkr(t, args(connect, cmd("elect", "-c", `echo "leads $ZKR_LOCK_PATH"`, "/shc-elect"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "leads /shc-elect\n", r.stdout)
	assert.Empty(t, children(t, c, "/shc"))
}
