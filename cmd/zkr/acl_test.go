package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// dialAs is an in-test session on cl with digest credentials user:password
// (none if user is empty).
func dialAs(t *testing.T, cl *zktest.Cluster, user, password string) *framework.Client {
	t.Helper()
	opts := []framework.Option{framework.WithSessionTimeout(4 * time.Second)}
	if user != "" {
		opts = append(opts, framework.WithDigestAuth(user, password))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := framework.Dial(ctx, cl.Addrs(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// authFile writes USER:PASSWORD to a file with mode perm and returns its
// path.
func authFile(t *testing.T, cred string, perm os.FileMode) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "auth")
	require.NoError(t, os.WriteFile(f, []byte(cred+"\n"), perm))
	require.NoError(t, os.Chmod(f, perm)) // whatever the umask
	return f
}

// With --acl creator, the nodes zkr makes with credentials are theirs: a
// client without them, or with others, can neither delete zkr's lock node
// (and so take the lock) nor queue under the path; a client with the same
// credentials can delete it, and zkr then stops COMMAND as for any loss.
func TestACLCreatorNodesAreDeletedOnlyWithTheCredentials(t *testing.T) {
	cl, connect := server(t)
	alice := dialAs(t, cl, "alice", "s3cret")
	f := authFile(t, "alice:s3cret", 0o600)
	holder := start(t, args(connect, cmd("--auth-file", f, "--acl", "creator", "lock", "/secure/job"),
		sh("echo held; while :; do sleep 0.1; done"))...)
	holder.expectLine(t, "held")
	kids := children(t, alice, "/secure/job")
	require.Len(t, kids, 1)
	node := "/secure/job/" + kids[0]

	for name, c := range map[string]*framework.Client{
		"no credentials":    dialAs(t, cl, "", ""),
		"other credentials": dialAs(t, cl, "bob", "s3cret"),
	} {
		t.Run(name, func(t *testing.T) {
			err := c.Delete(t.Context(), node, -1)
			assert.ErrorIs(t, err, zk.ErrNoAuth, "deleted zkr's lock node")
			_, err = c.Create(t.Context(), "/secure/job/intruder", nil)
			assert.ErrorIs(t, err, zk.ErrNoAuth, "created a node under zkr's lock path")
		})
	}
	assert.Equal(t, kids, children(t, alice, "/secure/job"))
	assert.Empty(t, holder.stderr.String(), "a warning for an auth file only its owner reads")

	require.NoError(t, alice.Delete(t.Context(), node, -1))
	r := holder.wait(t, time.Minute)
	assert.Equal(t, exitLost, r.code, r.stderr)
}

// --acl creator (or ZKR_ACL=creator) without credentials gives the nodes to
// nobody: a usage error before anything is sent, as is an ACL zkr does not
// know.
func TestACLCreatorWithoutCredentialsIsAUsageError(t *testing.T) {
	cl, connect := server(t)
	c := client(t, cl)
	for name, run := range map[string]func() result{
		"--acl creator": func() result { return zkr(t, args(connect, cmd("--acl", "creator", "lock", "/p"), sh("true"))...) },
		"ZKR_ACL=creator": func() result {
			return startWith(t, []string{"ZKR_ACL=creator"}, args(connect, cmd("ls", "/p"))...).wait(t, time.Minute)
		},
		"--acl world": func() result {
			return zkr(t, args(connect, cmd("--auth-file", authFile(t, "a:b", 0o600), "--acl", "world", "lock", "/p"), sh("true"))...)
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := run()
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, "--acl")
		})
	}
	assert.ElementsMatch(t, []string{"zookeeper"}, children(t, c, "/"), "a usage error touched the server")
}

// An auth file its group or others may read gets a warning, as ssh gives
// for a private key; zkr still uses it.
func TestAuthFileReadableByOthersWarns(t *testing.T) {
	_, connect := server(t)
	for _, perm := range []os.FileMode{0o644, 0o640} {
		f := authFile(t, "alice:s3cret", perm)
		r := zkr(t, args(connect, cmd("--auth-file", f, "lock", "/p"), sh("echo ran"))...)
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "ran\n", r.stdout)
		assert.Contains(t, r.stderr, "warning: --auth-file "+f)
		assert.Contains(t, r.stderr, "chmod 600")
	}
	r := startWith(t, []string{"ZKR_AUTH_FILE=" + authFile(t, "alice:s3cret", 0o400)}, args(connect, cmd("lock", "/p"), sh("echo ran"))...).wait(t, time.Minute)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
}
