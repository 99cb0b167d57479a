package main

import (
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionPrintsOneLineFromTheBuild(t *testing.T) {
	for _, a := range [][]string{{"--version"}, {"version"}} {
		r := zkr(t, a...)
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Regexp(t, `^zkr \S+ .*go1\.\d+`, r.stdout)
		assert.Equal(t, 1, strings.Count(r.stdout, "\n"), r.stdout)
		assert.Empty(t, r.stderr)
	}
	r := zkr(t, "version", "extra")
	assert.Equal(t, exitUsage, r.code)
}

func TestVersionLine(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/zkrecipes/zkrecipes", Version: "v0.2.0"}}
	assert.Equal(t, "zkr v0.2.0 go1.26.0", versionLine(bi, true))

	bi.Main.Version = "(devel)"
	bi.Settings = []debug.BuildSetting{
		{Key: "vcs.revision", Value: "026ad6366dc1aa00112233445566778899aabbcc"},
		{Key: "vcs.time", Value: "2026-11-22T06:55:38Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	assert.Equal(t, "zkr (devel) revision 026ad6366dc1+dirty 2026-11-22T06:55:38Z go1.26.0", versionLine(bi, true))
	assert.Contains(t, versionLine(nil, false), "unknown version")
}

// The binary users ship links no test code: no testing package, testify
// or testcontainers (and the Docker client behind it).
func TestZkrLinksNoTestCode(t *testing.T) {
	for _, pkg := range deps(t, ".") {
		switch {
		case pkg == "testing", strings.HasPrefix(pkg, "testing/"),
			strings.Contains(pkg, "stretchr/testify"),
			strings.Contains(pkg, "testcontainers"),
			strings.Contains(pkg, "github.com/moby/"),
			strings.HasSuffix(pkg, "/internal/zktest"),
			strings.HasSuffix(pkg, "/integration/testkit"):
			t.Errorf("zkr links %s", pkg)
		}
	}
}

// A service that imports the recipes gets the client, retry timing, UUIDs,
// a goroutine id and the OpenTelemetry API (metrics go to the application's provider, by
// default the global one, whose package brings otel's own few
// dependencies), and nothing the tests or the CLI use: no OpenTelemetry
// SDK or exporter, no Prometheus.
func TestLibraryImportGraphStaysSmall(t *testing.T) {
	allowed := []string{
		"github.com/go-zookeeper/zk", "github.com/google/uuid", "github.com/cenkalti/backoff/v4",
		"go.opentelemetry.io/otel",
		// The goroutine id of the reentrant locks, without runtime.Stack
		// (internal/goid checks it against runtime.Stack at start-up).
		"github.com/petermattis/goid",
		// What go.opentelemetry.io/otel's global providers import.
		"go.opentelemetry.io/auto/sdk", "github.com/go-logr/logr", "github.com/go-logr/stdr", "github.com/cespare/xxhash/v2",
	}
	forbidden := []string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "github.com/prometheus/"}
	for _, pkg := range deps(t, "../../recipes/...", "../../framework", "../../conn", "../../retry") {
		first, _, _ := strings.Cut(pkg, "/")
		if !strings.Contains(first, ".") || pkg == "github.com/zkrecipes/zkrecipes" || strings.HasPrefix(pkg, "github.com/zkrecipes/zkrecipes/") {
			continue // the standard library, or ours (the root package too: the errors)
		}
		ok := false
		for _, a := range allowed {
			ok = ok || pkg == a || strings.HasPrefix(pkg, a+"/")
		}
		for _, f := range forbidden {
			ok = ok && !strings.HasPrefix(pkg, f)
		}
		assert.True(t, ok, "the library links %s", pkg)
	}
}

func deps(t *testing.T, patterns ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, patterns...)...).Output()
	require.NoError(t, err)
	return strings.Fields(string(out))
}
