package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// Every global option has a ZKR_ variable; an option on the command line
// wins over it. ZK_CONNECT still works; ZKR_CONNECT wins over it.
func TestGlobalOptionsFromTheEnvironment(t *testing.T) {
	cl, _ := server(t)
	env := []string{"ZK_CONNECT=127.0.0.1:1", "ZKR_CONNECT=" + cl.ConnectString(), "ZKR_ID=from-env", "ZKR_SESSION_TIMEOUT=3s"}
	r := startWith(t, env, "lock", "/env", "--", "sh", "-c", `echo "$ZKR_PARTICIPANT_ID"`).wait(t, time.Minute)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "from-env\n", r.stdout)

	r = startWith(t, env, "--id", "from-flag", "lock", "/env", "--", "sh", "-c", `echo "$ZKR_PARTICIPANT_ID"`).wait(t, time.Minute)
	assert.Equal(t, "from-flag\n", r.stdout, "the flag wins: %s", r.stderr)

	r = startWith(t, []string{"ZKR_CONNECT=127.0.0.1:1"}, "--connect", cl.ConnectString(), "lock", "/env", "--", "true").wait(t, time.Minute)
	assert.Equal(t, 0, r.code, "--connect wins over ZKR_CONNECT: %s", r.stderr)

	for _, bad := range []string{"ZKR_SESSION_TIMEOUT=soon", "ZKR_DIAL_TIMEOUT=x", "ZKR_VERBOSE=maybe"} {
		r = startWith(t, []string{bad}, "--connect", cl.ConnectString(), "lock", "/env", "--", "true").wait(t, time.Minute)
		assert.Equal(t, exitUsage, r.code, "%s: %s", bad, r.stderr)
		assert.Contains(t, r.stderr, strings.SplitN(bad, "=", 2)[0])
	}
	r = zkr(t, "--help")
	for _, v := range []string{"ZKR_CONNECT", "ZKR_SESSION_TIMEOUT", "ZKR_DIAL_TIMEOUT", "ZKR_NAMESPACE", "ZKR_AUTH", "ZKR_AUTH_FILE", "ZKR_TLS_CA", "ZKR_TLS_CERT", "ZKR_TLS_KEY", "ZKR_ID", "ZKR_VERBOSE"} {
		assert.Contains(t, r.stdout, v, "--help does not name %s", v)
	}
}

// Credentials stay off the command line: --auth-file and ZKR_AUTH work,
// no zkr process shows the password in its argv (what ps shows), COMMAND
// does not get it, and --auth still works but warns.
func TestCredentialsOffTheCommandLine(t *testing.T) {
	cl, connect := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice, err := framework.Dial(ctx, cl.Addrs(),
		framework.WithDigestAuth("alice", "s3cret"), framework.WithACLProvider(framework.CreatorACL()))
	require.NoError(t, err)
	defer alice.Close()
	_, err = alice.Create(ctx, "/secure", nil)
	require.NoError(t, err)

	authFile := filepath.Join(t.TempDir(), "auth")
	require.NoError(t, os.WriteFile(authFile, []byte("alice:s3cret\n"), 0o600))
	script := `echo "auth=${ZKR_AUTH:-none}"; echo ready; sleep 300`
	for name, run := range map[string]func() *proc{
		"--auth-file": func() *proc {
			return start(t, args(connect, cmd("--auth-file", authFile, "lock", "/secure/lock"), sh(script))...)
		},
		"ZKR_AUTH_FILE": func() *proc {
			return startWith(t, []string{"ZKR_AUTH_FILE=" + authFile}, args(connect, cmd("lock", "/secure/lock"), sh(script))...)
		},
		"ZKR_AUTH": func() *proc {
			return startWith(t, []string{"ZKR_AUTH=alice:s3cret"}, args(connect, cmd("lock", "/secure/lock"), sh(script))...)
		},
	} {
		t.Run(name, func(t *testing.T) {
			z := run()
			z.expectLine(t, "auth=none") // COMMAND does not get the credentials
			z.expectLine(t, "ready")
			for _, pid := range append([]int{z.cmd.Process.Pid}, childrenOf(z.cmd.Process.Pid)...) {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
				assert.NotContains(t, string(b), "s3cret", "pid %d shows the password in ps", pid)
			}
			z.signal(t, os.Interrupt)
			r := z.wait(t, 30*time.Second)
			assert.NotContains(t, r.stderr, "warning")
		})
	}

	// A lock directory zkr's first run made is open (zkr's ACL is the
	// default); a new one under /secure needs alice's credentials.
	r := zkr(t, args(connect, cmd("lock", "/secure/other", "--", "true"))...)
	assert.Equal(t, exitFailed, r.code, "no credentials, no lock: %s", r.stderr)
	r = zkr(t, args(connect, cmd("--auth", "alice:s3cret", "lock", "/secure/other", "--", "true"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: --auth shows the password")
	assert.Equal(t, 1, strings.Count(r.stderr, "warning"), "warned once: %s", r.stderr)
}

// flock's -n: a hold that is taken is not waited for; zkr exits 1 (or
// --conflict-exit-code) at once and leaves nothing behind.
func TestNonblockExitsWithTheConflictCode(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	m, err := mutex.New(c, "/flock")
	require.NoError(t, err)
	h, err := m.Acquire(context.Background())
	require.NoError(t, err)

	r := zkr(t, args(connect, cmd("lock", "-n", "/flock", "--", "echo", "ran"))...)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Empty(t, r.stdout, "COMMAND ran")
	r = zkr(t, args(connect, cmd("lock", "--nonblock", "--conflict-exit-code", "7", "/flock", "--", "true"))...)
	assert.Equal(t, 7, r.code, r.stderr)
	r = zkr(t, args(connect, cmd("sem", "--max", "1", "-n", "/flock-sem", "--", "true"))...)
	assert.Equal(t, 0, r.code, "a free semaphore: %s", r.stderr)
	assert.Len(t, children(t, c, "/flock"), 1, "-n left a node")

	require.NoError(t, h.Release())
	r = zkr(t, args(connect, cmd("lock", "-n", "/flock", "--", "echo", "ran"))...)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "ran\n", r.stdout)
	r = zkr(t, args(connect, cmd("lock", "--conflict-exit-code", "300", "/flock", "--", "true"))...)
	assert.Equal(t, exitUsage, r.code)
}

// --timeout counts the connection too: a server that does not answer ends
// zkr at --timeout, not after --dial-timeout as well. With no session
// nothing is known of the lock: 125 and a message about the connection,
// not 124, which says the lock was busy. Before, it was 124: a script
// could not tell ZooKeeper down from a busy lock.
func TestTimeoutCountsTheConnection(t *testing.T) {
	cl, _ := server(t)
	p := cl.NewProxy()
	p.Blackhole()
	started := time.Now()
	r := zkr(t, "--connect", p.ConnectString(), "--dial-timeout", "30s", "lock", "--timeout", "1s", "/x", "--", "true")
	assert.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stderr, "connecting to "+p.ConnectString())
	assert.Contains(t, r.stderr, "no session")
	assert.Less(t, time.Since(started), 10*time.Second, "--timeout did not bound the connection")
	p.Heal()
}

// The command line wins over the environment for credentials too: --auth
// over ZKR_AUTH_FILE, --auth-file over ZKR_AUTH. Two given the same way
// (both options, or both variables) are a usage error that names them,
// not a silent choice. Before, ZKR_AUTH_FILE with --auth exited 2, and
// ZKR_AUTH with ZKR_AUTH_FILE silently used the file.
func TestAuthOptionsWinOverTheEnvironment(t *testing.T) {
	cl, connect := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice, err := framework.Dial(ctx, cl.Addrs(),
		framework.WithDigestAuth("alice", "s3cret"), framework.WithACLProvider(framework.CreatorACL()))
	require.NoError(t, err)
	defer alice.Close()
	_, err = alice.Create(ctx, "/secure", nil)
	require.NoError(t, err)
	dir := t.TempDir()
	aliceFile, bobFile := filepath.Join(dir, "alice"), filepath.Join(dir, "bob")
	require.NoError(t, os.WriteFile(aliceFile, []byte("alice:s3cret\n"), 0o600))
	require.NoError(t, os.WriteFile(bobFile, []byte("bob:nope\n"), 0o600))

	run := func(env []string, opts ...string) result {
		return startWith(t, env, args(connect, opts, cmd("lock", "/secure/auth", "--", "true"))...).wait(t, time.Minute)
	}
	r := run([]string{"ZKR_AUTH_FILE=" + bobFile}, "--auth", "alice:s3cret")
	assert.Equal(t, 0, r.code, "--auth wins over ZKR_AUTH_FILE: %s", r.stderr)
	r = run([]string{"ZKR_AUTH=bob:nope"}, "--auth-file", aliceFile)
	assert.Equal(t, 0, r.code, "--auth-file wins over ZKR_AUTH: %s", r.stderr)

	r = run([]string{"ZKR_AUTH=alice:s3cret", "ZKR_AUTH_FILE=" + aliceFile})
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "ZKR_AUTH and ZKR_AUTH_FILE")
	r = run(nil, "--auth", "alice:s3cret", "--auth-file", aliceFile)
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--auth and --auth-file")
}
