package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// zkr bench's line is read by other tools: exactly one line on stdout, the
// fields in this order, integers only.
func TestBenchPrintsOneWellFormedLine(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for mode, tc := range map[string]struct {
		args []string
		want string
	}{
		"uncontended": {[]string{"--n", "20"},
			`^peer=zkrecipes mode=uncontended n=20 p50_us=\d+ p99_us=\d+ ops_per_s=\d+\n$`},
		"contended": {[]string{"--clients", "3", "--duration", "1s"},
			`^peer=zkrecipes mode=contended clients=3 acquisitions=[1-9]\d* per_s=\d+ min_client=\d+ max_client=\d+ overlaps=0\n$`},
		"latch": {[]string{"--rounds", "5"},
			`^peer=zkrecipes mode=latch rounds=5 p50_us=\d+ p99_us=\d+\n$`},
		"queue": {[]string{"--waiters", "15"},
			`^peer=zkrecipes mode=queue waiters=15 per_handoff_us=\d+ goroutines_per_waiter=\d+ bytes_per_waiter=-?\d+\n$`},
		"keys": {[]string{"--keys", "20", "--workers", "4", "--duration", "500ms"},
			`^peer=zkrecipes mode=keys keys=20 workers=4 per_s=[1-9]\d* p50_us=\d+ p99_us=\d+ floor_per_s=[1-9]\d*\n$`},
	} {
		t.Run(mode, func(t *testing.T) {
			r := zkr(t, args(connect, cmd("bench", "--mode", mode), tc.args)...)
			assert.Equal(t, 0, r.code, r.stderr)
			assert.Regexp(t, tc.want, r.stdout)
			assert.NotEmpty(t, r.stderr, "progress goes to stderr")
			assert.Empty(t, children(t, c, "/zkr-bench"), "the run's path was left behind")
		})
	}
}

// --peer zklock runs the same loops with go-zookeeper's zk.Lock, so that the
// two compare on one server in one sitting; its line says whose it is.
func TestBenchPeerZKLockPrintsItsOwnLine(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for mode, tc := range map[string]struct {
		args []string
		want string
	}{
		"uncontended": {[]string{"--n", "20"},
			`^peer=zklock mode=uncontended n=20 p50_us=\d+ p99_us=\d+ ops_per_s=\d+\n$`},
		"contended": {[]string{"--clients", "3", "--duration", "1s"},
			`^peer=zklock mode=contended clients=3 acquisitions=[1-9]\d* per_s=\d+ min_client=\d+ max_client=\d+ overlaps=0\n$`},
		"queue": {[]string{"--waiters", "15"},
			`^peer=zklock mode=queue waiters=15 per_handoff_us=\d+ goroutines_per_waiter=\d+ bytes_per_waiter=-?\d+\n$`},
		"keys": {[]string{"--keys", "20", "--workers", "4", "--duration", "500ms"},
			`^peer=zklock mode=keys keys=20 workers=4 per_s=[1-9]\d* p50_us=\d+ p99_us=\d+ floor_per_s=[1-9]\d*\n$`},
	} {
		t.Run(mode, func(t *testing.T) {
			r := zkr(t, args(connect, cmd("bench", "--peer", "zklock", "--mode", mode), tc.args)...)
			assert.Equal(t, 0, r.code, r.stderr)
			assert.Regexp(t, tc.want, r.stdout)
			assert.Empty(t, children(t, c, "/zkr-bench"), "the run's path was left behind")
		})
	}
	for _, bad := range [][]string{{"--peer", "zklock", "--mode", "latch"}, {"--peer", "etcd", "--mode", "keys"}} {
		r := zkr(t, args(connect, cmd("bench"), bad)...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", bad, r.stderr)
		assert.Empty(t, r.stdout)
	}
}
