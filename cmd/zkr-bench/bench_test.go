package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zkr-bench's line is read by other tools: exactly one line on stdout, the
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
			`^peer=zkrecipes mode=contended clients=3 acquisitions=[1-9]\d* per_s=\d+ min_client=\d+ max_client=\d+ overlaps=0 cpu_ns_per_op=[1-9]\d* allocs_per_op=[1-9]\d*\n$`},
		"latch": {[]string{"--rounds", "5"},
			`^peer=zkrecipes mode=latch rounds=5 p50_us=\d+ p99_us=\d+\n$`},
		"queue": {[]string{"--waiters", "15"},
			`^peer=zkrecipes mode=queue waiters=15 per_handoff_us=\d+ goroutines_per_waiter=\d+ bytes_per_waiter=-?\d+\n$`},
		"keys": {[]string{"--keys", "20", "--workers", "4", "--duration", "500ms"},
			`^peer=zkrecipes mode=keys keys=20 workers=4 per_s=[1-9]\d* p50_us=\d+ p99_us=\d+ floor_per_s=[1-9]\d* cpu_ns_per_op=[1-9]\d* allocs_per_op=[1-9]\d*\n$`},
	} {
		t.Run(mode, func(t *testing.T) {
			r := zkrBench(t, args(connect, cmd("--mode", mode), tc.args)...)
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
			`^peer=zklock mode=contended clients=3 acquisitions=[1-9]\d* per_s=\d+ min_client=\d+ max_client=\d+ overlaps=0 cpu_ns_per_op=[1-9]\d* allocs_per_op=[1-9]\d*\n$`},
		"queue": {[]string{"--waiters", "15"},
			`^peer=zklock mode=queue waiters=15 per_handoff_us=\d+ goroutines_per_waiter=\d+ bytes_per_waiter=-?\d+\n$`},
		"keys": {[]string{"--keys", "20", "--workers", "4", "--duration", "500ms"},
			`^peer=zklock mode=keys keys=20 workers=4 per_s=[1-9]\d* p50_us=\d+ p99_us=\d+ floor_per_s=[1-9]\d* cpu_ns_per_op=[1-9]\d* allocs_per_op=[1-9]\d*\n$`},
	} {
		t.Run(mode, func(t *testing.T) {
			r := zkrBench(t, args(connect, cmd("--peer", "zklock", "--mode", mode), tc.args)...)
			assert.Equal(t, 0, r.code, r.stderr)
			assert.Regexp(t, tc.want, r.stdout)
			assert.Empty(t, children(t, c, "/zkr-bench"), "the run's path was left behind")
		})
	}
	// zk.Lock runs on a go-zookeeper session of its own, dialed as the
	// module's:
	// with the credentials too.
	t.Run("keys with credentials", func(t *testing.T) {
		r := startWith(t, []string{"ZKR_AUTH=bench:secret"},
			args(connect, cmd("--peer", "zklock", "--mode", "keys", "--keys", "5", "--workers", "2", "--duration", "300ms"))...).wait(t, time.Minute)
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Regexp(t, `^peer=zklock mode=keys keys=5 workers=2 per_s=[1-9]\d* p50_us=\d+ p99_us=\d+ floor_per_s=[1-9]\d* cpu_ns_per_op=[1-9]\d* allocs_per_op=[1-9]\d*\n$`, r.stdout)
	})
	for _, bad := range [][]string{{"--peer", "zklock", "--mode", "latch"}, {"--peer", "etcd", "--mode", "keys"}} {
		r := zkrBench(t, args(connect, bad)...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", bad, r.stderr)
		assert.Empty(t, r.stdout)
	}
}

// --output json (or ZKR_OUTPUT=json) prints the same result as one JSON
// object on one line: the same field names, numbers as numbers, for jq and
// scripts that would rather not split key=value fields.
func TestBenchOutputJSONHasTheTextLinesFieldsAsNumbers(t *testing.T) {
	_, connect := server(t)
	text := zkrBench(t, args(connect, cmd("--mode", "uncontended", "--n", "20"))...)
	require.Equal(t, 0, text.code, text.stderr)
	var names []string
	for _, f := range strings.Fields(text.stdout) {
		name, _, _ := strings.Cut(f, "=")
		names = append(names, name)
	}

	for name, run := range map[string]func() result{
		"--output json": func() result {
			return zkrBench(t, args(connect, cmd("--output", "json", "--mode", "uncontended", "--n", "20"))...)
		},
		"-o json": func() result {
			return zkrBench(t, args(connect, cmd("--mode", "uncontended", "-o", "json", "--n", "20"))...)
		},
		"ZKR_OUTPUT=json": func() result {
			return startWith(t, []string{"ZKR_OUTPUT=json"}, args(connect, cmd("--mode", "uncontended", "--n", "20"))...).wait(t, time.Minute)
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := run()
			require.Equal(t, 0, r.code, r.stderr)
			require.Equal(t, 1, strings.Count(r.stdout, "\n"), "one line: %q", r.stdout)
			assert.Equal(t, names, jsonKeys(t, r.stdout), "the text line's names, in its order")
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
			assert.Equal(t, "zkrecipes", got["peer"])
			assert.Equal(t, "uncontended", got["mode"])
			assert.Equal(t, float64(20), got["n"])
			for _, k := range []string{"p50_us", "p99_us", "ops_per_s"} {
				assert.IsType(t, float64(0), got[k], "%s is a JSON number", k)
			}
		})
	}
	// The command line wins over the variable.
	r := startWith(t, []string{"ZKR_OUTPUT=json"}, args(connect, cmd("-o", "text", "--mode", "uncontended", "--n", "5"))...).wait(t, time.Minute)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^peer=zkrecipes mode=uncontended n=5 `, r.stdout)
}

// jsonKeys returns the keys of the JSON object in line, in their order.
func jsonKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok, "not an object: %s", line)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
	}
	return keys
}
