package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A mistake on the command line is one line on stderr and status 2, found
// before anything is sent: the server must be untouched.
func TestUsageErrorsExit2WithOneLineAndCreateNothing(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for name, tc := range map[string]struct {
		env  []string
		args []string
	}{
		"no mode":             {nil, nil},
		"bad mode":            {nil, []string{"--mode", "fast"}},
		"bad output":          {nil, []string{"--mode", "keys", "-o", "yaml"}},
		"bad ZKR_OUTPUT":      {[]string{"ZKR_OUTPUT=yaml"}, []string{"--mode", "keys"}},
		"zklock latch":        {nil, []string{"--peer", "zklock", "--mode", "latch"}},
		"unknown peer":        {nil, []string{"--peer", "etcd", "--mode", "keys"}},
		"an argument":         {nil, []string{"--mode", "keys", "extra"}},
		"unknown flag":        {nil, []string{"--mode", "keys", "--bogus"}},
		"zero n":              {nil, []string{"--mode", "uncontended", "--n", "0"}},
		"chroot":              {nil, []string{"--mode", "keys", "--connect", cl.ConnectString() + "/app"}},
		"bad credentials":     {[]string{"ZKR_AUTH=nobody"}, []string{"--mode", "keys"}},
		"missing auth file":   {nil, []string{"--mode", "keys", "--auth-file", "/nonexistent/auth"}},
		"cert without key":    {nil, []string{"--mode", "keys", "--tls-cert", "/etc/hostname"}},
		"bad session timeout": {[]string{"ZKR_SESSION_TIMEOUT=soon"}, []string{"--mode", "keys"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := startWith(t, tc.env, args(connect, tc.args)...).wait(t, time.Minute)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "want one line, got:\n%s", r.stderr)
			assert.Contains(t, r.stderr, "zkr-bench --help")
		})
	}
	assert.ElementsMatch(t, []string{"zookeeper"}, children(t, c, "/"), "a usage error touched the server")
}

func TestHelpReadsLikeAManPage(t *testing.T) {
	for _, a := range []string{"--help", "-h"} {
		r := zkrBench(t, a)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Empty(t, r.stderr)
		last := -1
		for _, s := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "EXAMPLES"} {
			i := strings.Index(r.stdout, s+"\n")
			assert.Greater(t, i, last, "section %s missing or out of order", s)
			last = i
		}
		assert.NotContains(t, r.stdout, "zkr bench --", "an example of the old subcommand")
	}
}

// SIGINT or SIGTERM stops a measurement: its path is removed, nothing is
// printed on stdout, and the status is the signal's, as a shell reports.
func TestSignalStopsTheRunAndRemovesItsPath(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for s, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		t.Run(s.String(), func(t *testing.T) {
			p := startWith(t, nil, args(connect, cmd("--mode", "contended", "--clients", "2", "--duration", "5m"))...)
			require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "contended: 2 sessions") },
				time.Minute, 20*time.Millisecond, "no progress line; stderr:\n%s", p.stderr.String())
			require.NoError(t, p.cmd.Process.Signal(s))
			r := p.wait(t, time.Minute)
			assert.Equal(t, want, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Empty(t, children(t, c, "/zkr-bench"), "the run's path was left behind")
		})
	}
}
