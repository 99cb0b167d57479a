package main

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freeAddr is a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// get fetches http://addr/path; code is 0 if nothing answers.
func get(addr, path string) (code int, body string) {
	c := http.Client{Timeout: 2 * time.Second}
	res, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// waitHTTP waits until addr answers path with code and returns the body.
func waitHTTP(t *testing.T, addr, path string, code int) string {
	t.Helper()
	var body string
	require.Eventually(t, func() bool {
		var got int
		got, body = get(addr, path)
		return got == code
	}, 30*time.Second, 20*time.Millisecond, "%s%s never answered %d; last: %s", addr, path, code, body)
	return body
}

// A holding zkr serves its client's metrics and a health check that says
// what it holds; a waiting one says it waits; a second zkr on a taken port
// fails before it queues.
func TestMetricsAddrServesMetricsAndHealthWhileHolding(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	addr, addr2 := freeAddr(t), freeAddr(t)
	release := filepath.Join(t.TempDir(), "release")

	holder := start(t, args(connect, cmd("--metrics-addr", addr, "lock", "/metrics/job"), sh("echo held; "+waitFile(release)))...)
	holder.expectLine(t, "held")
	body := waitHTTP(t, addr, "/healthz", http.StatusOK)
	assert.Contains(t, body, "ok: holding /metrics/job (fencing token ")

	code, metrics := get(addr, "/metrics")
	require.Equal(t, http.StatusOK, code, metrics)
	for _, want := range []string{
		`zkrecipes_hold_active\{kind="mutex",[^}]*\} 1`,
		`zkrecipes_acquire_duration_seconds_count\{kind="mutex",[^}]*outcome="acquired"\} 1`,
		`zkrecipes_request_duration_seconds_count\{operation="create",[^}]*\} [1-9]`,
		`zkrecipes_session_established_total\{[^}]*\} 1`,
		`zkrecipes_session_connected\{[^}]*\} 1`,
	} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(metrics) {
			t.Errorf("/metrics has no line matching %s", want)
		}
	}
	assert.NotContains(t, metrics, `path="/metrics/job"`, "no lock path in an attribute by default")

	// ZKR_METRICS_ADDR is the same option.
	waiter := startWith(t, []string{"ZKR_METRICS_ADDR=" + addr2}, args(connect, cmd("lock", "/metrics/job"), sh("echo second"))...)
	waitChildren(t, c, "/metrics/job", 2)
	body = waitHTTP(t, addr2, "/healthz", http.StatusOK)
	assert.Equal(t, "ok: waiting for /metrics/job\n", body)

	// A taken port fails zkr before it queues.
	r := zkr(t, args(connect, cmd("--metrics-addr", addr, "lock", "/metrics/job"), sh("echo never"))...)
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--metrics-addr")
	assert.NotContains(t, r.stdout, "never")
	assert.Len(t, children(t, c, "/metrics/job"), 2, "the failed zkr queued")

	require.NoError(t, touch(release))
	require.Equal(t, 0, holder.wait(t, time.Minute).code)
	assert.Equal(t, 0, waiter.wait(t, time.Minute).code)
	code, _ = get(addr, "/healthz")
	assert.Zero(t, code, "zkr's server outlived it")
}

// /healthz turns 503 once zkr's link to ZooKeeper is in doubt, while zkr
// is still stopping COMMAND (which ignores SIGTERM here, so that zkr waits
// out its grace before it exits).
func TestMetricsHealthzFailsOnceTheHoldIsInDoubt(t *testing.T) {
	cl, _ := server(t)
	p := cl.NewProxy()
	addr := freeAddr(t)
	holder := start(t, "--connect", p.ConnectString(), "--session-timeout", "6s", "--metrics-addr", addr,
		"lock", "/metrics/cut", "--", "sh", "-c", `trap "" TERM; echo held; while :; do sleep 0.1; done`)
	holder.expectLine(t, "held")
	waitHTTP(t, addr, "/healthz", http.StatusOK)

	p.Blackhole()
	body := waitHTTP(t, addr, "/healthz", http.StatusServiceUnavailable)
	assert.True(t, strings.HasPrefix(body, "session ") || strings.HasPrefix(body, "lost: holding /metrics/cut"), body)
	r := holder.wait(t, time.Minute)
	assert.Equal(t, exitLost, r.code, r.stderr)
}

// /metrics says whose metrics they are (service zkr, zkr's version; the
// library's scope with its version), and has the Go runtime's and the
// process's, which every Prometheus user expects of a Go program.
// (Before: service_name="unknown_service:zkr", otel_scope_version="", and
// no go_ or process_ metric.)
func TestMetricsNameTheServiceAndHaveGoAndProcessMetrics(t *testing.T) {
	_, connect := server(t)
	v := zkr(t, "--version")
	require.Equal(t, 0, v.code, v.stderr)
	version := strings.Fields(v.stdout)[1] // "zkr VERSION ..."
	addr := freeAddr(t)
	release := filepath.Join(t.TempDir(), "release")
	holder := start(t, args(connect, cmd("--metrics-addr", addr, "lock", "/metrics/named"), sh("echo held; "+waitFile(release)))...)
	holder.expectLine(t, "held")
	waitHTTP(t, addr, "/healthz", http.StatusOK)
	code, metrics := get(addr, "/metrics")
	require.Equal(t, http.StatusOK, code, metrics)
	q := regexp.QuoteMeta
	for _, want := range []string{
		`target_info\{[^}]*service_name="zkr"[^}]*\} 1`,
		`target_info\{[^}]*service_version="` + q(version) + `"[^}]*\} 1`,
		`zkrecipes_hold_active\{[^}]*otel_scope_version="` + q(version) + `"[^}]*\} 1`,
		`go_goroutines [1-9]\d*`,
		`go_threads [1-9]\d*`,
		`go_memstats_alloc_bytes [0-9.e+]+`,
		`go_memstats_heap_inuse_bytes [0-9.e+]+`,
		`go_gc_duration_seconds_count \d+`,
		`go_info\{version="go[^"]+"\} 1`,
		`process_cpu_seconds_total [0-9.e+-]+`,
		`process_open_fds [1-9]\d*`,
		`process_max_fds [1-9][0-9.e+]*`,
		`process_resident_memory_bytes [1-9][0-9.e+]*`,
		`process_start_time_seconds [1-9][0-9.e+]*`,
	} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(metrics) {
			t.Errorf("/metrics has no line matching %s", want)
		}
	}
	require.NoError(t, touch(release))
	assert.Equal(t, 0, holder.wait(t, time.Minute).code)
}
