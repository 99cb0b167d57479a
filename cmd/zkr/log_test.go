package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --log-level shows the library's own log (its slog lines: sessions, links,
// retries) on stderr, as text or, with --log-format json, one object a
// line; ZKR_LOG_LEVEL and ZKR_LOG_FORMAT do the same. Without them
// stderr stays as it was: nothing from the library.
func TestLogLevelShowsTheLibrarysLogOnStderr(t *testing.T) {
	_, connect := server(t)
	run := func(env []string, a ...string) result {
		t.Helper()
		r := startWith(t, env, args(connect, a, sh("echo ran"))...).wait(t, time.Minute)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, "ran\n", r.stdout)
		return r
	}
	const established = "zookeeper session established"

	r := run(nil, "lock", "/p")
	assert.Empty(t, r.stderr, "the library is silent by default")

	for name, r := range map[string]result{
		"--log-level info":  run(nil, "--log-level", "info", "lock", "/p"),
		"ZKR_LOG_LEVEL":     run([]string{"ZKR_LOG_LEVEL=info"}, "lock", "/p"),
		"after the command": run(nil, "lock", "--log-level", "debug", "/p"),
	} {
		assert.Contains(t, r.stderr, `level=INFO msg="`+established+`"`, name)
	}

	r = run(nil, "--log-level", "warn", "lock", "/p")
	assert.NotContains(t, r.stderr, established, "an info line at --log-level warn")

	for name, r := range map[string]result{
		"--log-format json": run(nil, "--log-format", "json", "--log-level", "debug", "lock", "/p"),
		"ZKR_LOG_FORMAT":    run([]string{"ZKR_LOG_FORMAT=json", "ZKR_LOG_LEVEL=debug"}, "lock", "/p"),
	} {
		var msgs, levels []string
		for _, l := range lines(r.stderr) {
			var v struct {
				Level string `json:"level"`
				Msg   string `json:"msg"`
			}
			require.NoError(t, json.Unmarshal([]byte(l), &v), "%s: not a JSON line: %q", name, l)
			msgs, levels = append(msgs, v.Msg), append(levels, v.Level)
		}
		assert.Contains(t, msgs, established, name)
		assert.Contains(t, levels, "DEBUG", name)
	}

	// A format alone shows warnings and errors: a clean run says nothing.
	r = run(nil, "--log-format", "text", "lock", "/p")
	assert.Empty(t, r.stderr)
}

// A bad level or format is a usage error, blamed where it came from.
func TestBadLogLevelOrFormatIsAUsageError(t *testing.T) {
	for _, tc := range []struct {
		env   []string
		args  []string
		blame string
	}{
		{nil, cmd("--log-level", "loud", "ls", "/p"), "--log-level loud"},
		{nil, cmd("ls", "--log-format", "xml", "/p"), "--log-format xml"},
		{[]string{"ZKR_LOG_LEVEL=loud"}, cmd("ls", "/p"), `ZKR_LOG_LEVEL="loud"`},
		{[]string{"ZKR_LOG_FORMAT=xml"}, cmd("lock", "/p", "--", "true"), `ZKR_LOG_FORMAT="xml"`},
	} {
		r := startWith(t, tc.env, append([]string{"--connect", "127.0.0.1:1", "--dial-timeout", "1s"}, tc.args...)...).wait(t, time.Minute)
		assert.Equal(t, exitUsage, r.code, r.stderr)
		assert.Contains(t, r.stderr, tc.blame)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	}
}
