package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// A zkr that cannot reach ZooKeeper gives up after --dial-timeout and
// says why, in one line, without -v: the cause is what the user needs to
// fix it. (Before: "no session with 127.0.0.1:1 after 15s", nothing else.)
func TestConnectRefusedSaysConnectionRefusedAfterTheDialTimeout(t *testing.T) {
	addr := freeAddr(t)
	start := time.Now()
	r := zkr(t, "--connect", addr, "--dial-timeout", "2s", "lock", "-n", "/x", "--", "true")
	took := time.Since(start)
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "connection refused")
	assert.Contains(t, r.stderr, addr)
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
	assert.Greater(t, took, 1500*time.Millisecond, "gave up before --dial-timeout")
	assert.Less(t, took, 10*time.Second, "--dial-timeout 2s was not the bound")

	// ZKR_DIAL_TIMEOUT is the same option.
	start = time.Now()
	r = startWith(t, []string{"ZKR_DIAL_TIMEOUT=1s"}, "--connect", addr, "ls", "/x").wait(t, time.Minute)
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "connection refused")
	assert.Less(t, time.Since(start), 10*time.Second)
}

// One name, one meaning, in the library and in zkr: the whole wait for a
// session is the dial timeout (framework.WithDialTimeout), the bound of
// each attempt to reach a server the connect timeout
// (framework.WithConnectTimeout). zkr's --connect-timeout was the first
// under the second's name; it is --dial-timeout now, and the old name is
// gone, from the manuals and the completion scripts too.
func TestDialTimeoutIsTheWholeWaitUnderTheLibrarysName(t *testing.T) {
	r := zkr(t, "--connect", "127.0.0.1:1", "--connect-timeout", "1s", "lock", "/x", "--", "true")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "-connect-timeout")

	r = zkr(t, "--help")
	help := strings.Join(strings.Fields(r.stdout), " ")
	assert.Contains(t, help, "--dial-timeout D [ZKR_DIAL_TIMEOUT]")
	assert.Contains(t, help, "framework.WithDialTimeout")
	for _, a := range [][]string{{"--help"}, {"lock", "--help"}, {"elect", "--help"}, {"ls", "--help"}, {"completion", "bash"}, {"completion", "zsh"}, {"completion", "fish"}} {
		r := zkr(t, a...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.NotContains(t, r.stdout, "connect-timeout", "zkr %v", a)
		assert.NotContains(t, r.stdout, "CONNECT_TIMEOUT", "zkr %v", a)
	}
}

// A server name that does not resolve is a failure to connect (125) that
// names the name, not a usage error or an "invalid option".
func TestConnectToANameThatDoesNotResolveSaysSo(t *testing.T) {
	r := zkr(t, "--connect", "no-such-host.invalid:2181", "--dial-timeout", "2s", "lock", "/x", "--", "true")
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "lookup no-such-host.invalid")
	assert.NotContains(t, r.stderr, "invalid argument")
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
}

// A TLS handshake that fails says that it did, and why. (--dial-timeout
// leaves a server that was just started time for its first handshake.)
func TestConnectWithAnUntrustedServerCertificateSaysWhy(t *testing.T) {
	cl := zktest.Standalone(t, zktest.WithTLS(zktest.NewTLS(t)))
	other := zktest.NewTLS(t) // a CA that did not sign the server's certificate
	r := zkr(t, "--connect", cl.SecureConnectString(), "--tls-ca", other.CAFile, "--dial-timeout", "5s", "lock", "/x", "--", "true")
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "certificate signed by unknown authority")
}

// ZooKeeper's chroot syntax, HOST:PORT/app, is the namespace, as every
// ZooKeeper client takes it (before: "bad port"); with a --namespace that
// says otherwise it is a usage error.
func TestConnectWithAChrootIsTheNamespace(t *testing.T) {
	cl, _ := server(t)
	c := client(t, cl)
	done := filepath.Join(t.TempDir(), "done")
	p := start(t, args(cmd("--connect", cl.ConnectString()+"/app/sub", "lock", "/job"),
		sh(`echo $ZKR_LOCK_PATH; `+waitFile(done)))...)
	p.expectLine(t, "/job")
	assert.Len(t, children(t, c, "/app/sub/job"), 1, "the lock was not taken under the chroot")
	require.NoError(t, touch(done))
	r := p.wait(t, 30*time.Second)
	require.Equal(t, 0, r.code, r.stderr)

	// The same namespace both ways is no conflict.
	r = zkr(t, "--connect", cl.ConnectString()+"/app", "--namespace", "app", "ls", "/job")
	assert.Equal(t, 0, r.code, r.stderr)

	for name, a := range map[string][]string{
		"another namespace":         {"--connect", cl.ConnectString() + "/app", "--namespace", "other", "ls", "/job"},
		"chroot before last server": {"--connect", cl.Addrs()[0] + "/app," + cl.Addrs()[0], "ls", "/job"},
		"bad chroot":                {"--connect", cl.ConnectString() + "/a//b", "ls", "/job"},
	} {
		t.Run(name, func(t *testing.T) {
			r := zkr(t, a...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, "--connect")
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
		})
	}
}
