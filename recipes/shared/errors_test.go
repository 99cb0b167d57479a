package shared_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/internal/option"
	"github.com/zkrecipes/zkrecipes/internal/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// Every failure of the package's API matches the sentinel its
// documentation names (errors.Is), bad input fails before anything is
// sent, and no failure leaves a node behind.
func TestEveryFailureMatchesItsDocumentedSentinel(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())

	unstarted, err := shared.NewCount(c, "/errs/unstarted", 1)
	require.NoError(t, err)
	unstartedValue, err := shared.NewValue(c, "/errs/unstarted-value", nil)
	require.NoError(t, err)
	started := newCount(t, c, "/errs/started", 1)
	closed := newCount(t, c, "/errs/closed", 1)
	closedGet, err := closed.Get()
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	closedClient := newClient(t, cl.Addrs())
	onClosedClient := newCount(t, closedClient, "/errs/closed-client", 1)
	require.NoError(t, closedClient.Close())
	neverStarts, err := shared.NewCount(closedClient, "/errs/never", 1)
	require.NoError(t, err)
	unversioned := shared.Versioned[int32]{Value: 1, Version: -1, Zxid: -1}
	foreign := shared.Option(option.WithParticipantID("x"))

	ctx10 := func() context.Context { return ctxT(t, 10*time.Second) }
	trySet := func(n *shared.Count, prev shared.Versioned[int32]) func() error {
		return func() error { _, _, err := n.TrySet(ctx10(), prev, 2); return err }
	}
	set := func(n *shared.Count) func() error {
		return func() error { _, err := n.Set(ctx10(), 2); return err }
	}
	get := func(n *shared.Count) func() error {
		return func() error { _, err := n.Get(); return err }
	}

	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"NewCount: nil client":        testkit.Fails(func() error { _, err := shared.NewCount(nil, "/x", 1); return err }, zkrecipes.ErrInvalidArgument),
		"NewCount: bad path":          testkit.Fails(func() error { _, err := shared.NewCount(c, "x/", 1); return err }, zkrecipes.ErrInvalidPath),
		"NewCount: option of another": testkit.Fails(func() error { _, err := shared.NewCount(c, "/x", 1, foreign); return err }, zkrecipes.ErrInvalidArgument),
		"NewValue: nil client":        testkit.Fails(func() error { _, err := shared.NewValue(nil, "/x", nil); return err }, zkrecipes.ErrInvalidArgument),
		"NewValue: bad path":          testkit.Fails(func() error { _, err := shared.NewValue(c, "/x/", nil); return err }, zkrecipes.ErrInvalidPath),
		"NewValue: root":              testkit.Fails(func() error { _, err := shared.NewValue(c, "", nil); return err }, zkrecipes.ErrInvalidPath),
		"NewValue: the root itself":   testkit.Fails(func() error { _, err := shared.NewValue(c, "/", nil); return err }, zkrecipes.ErrInvalidPath),
		"NewCount: the root itself":   testkit.Fails(func() error { _, err := shared.NewCount(c, "/", 1); return err }, zkrecipes.ErrInvalidPath),
		"Get: not started":            testkit.Fails(get(unstarted), zkrecipes.ErrNotStarted),
		"Set: not started":            testkit.Fails(set(unstarted), zkrecipes.ErrNotStarted),
		"TrySet: not started":         testkit.Fails(trySet(unstarted, closedGet), zkrecipes.ErrNotStarted),
		"Err: not started":            testkit.Fails(unstarted.Err, zkrecipes.ErrNotStarted),
		"Value Get: not started":      testkit.Fails(func() error { _, err := unstartedValue.Get(); return err }, zkrecipes.ErrNotStarted),
		"Start: twice":                testkit.Fails(func() error { return started.Start(ctx10()) }, zkrecipes.ErrStarted),
		"Start: cancelled":            testkit.Fails(func() error { return unstarted.Start(testkit.Cancelled()) }, context.Canceled),
		"Start: client closed":        testkit.Fails(func() error { return neverStarts.Start(ctx10()) }, zkrecipes.ErrClosed),
		"Start: after Close":          testkit.Fails(func() error { return closed.Start(ctx10()) }, zkrecipes.ErrClosed),
		"TrySet: unversioned":         testkit.Fails(trySet(started, unversioned), shared.ErrUnversioned),
		"Get: closed":                 testkit.Fails(get(closed), zkrecipes.ErrClosed),
		"Set: closed":                 testkit.Fails(set(closed), zkrecipes.ErrClosed),
		"TrySet: closed":              testkit.Fails(trySet(closed, closedGet), zkrecipes.ErrClosed),
		"Err: closed":                 testkit.Fails(closed.Err, zkrecipes.ErrClosed),
		"Set: client closed":          testkit.Fails(set(onClosedClient), zkrecipes.ErrClosed),
		"TrySet: client closed":       testkit.Fails(trySet(onClosedClient, closedGet), zkrecipes.ErrClosed),
		"Err: client closed":          testkit.Fails(onClosedClient.Err, zkrecipes.ErrClosed),
		"Set: deadline":               testkit.Fails(func() error { _, err := started.Set(testkit.Expired(), 2); return err }, context.DeadlineExceeded),
		"DecodeCount: 3 bytes":        testkit.Fails(func() error { _, err := shared.DecodeCount([]byte{1, 2, 3}); return err }, zkrecipes.ErrBadData),
		"DecodeCount: 8 bytes (long)": testkit.Fails(func() error { _, err := shared.DecodeCount(make([]byte, 8)); return err }, zkrecipes.ErrBadData),
		"Set: deleted node":           testkit.Fails(func() error { return setDeleted(t, c) }, zkrecipes.ErrNodeDeleted, zk.ErrNoNode),
	})

	assert.NoError(t, closed.Close(), "Close is idempotent")
	for _, p := range []string{"/errs/unstarted", "/errs/unstarted-value", "/errs/never", "/x"} {
		ok, _, err := c.Exists(ctx10(), p)
		require.NoError(t, err)
		assert.False(t, ok, "%s made by a call that failed or was never started", p)
	}
}

// setDeleted sets a count whose node someone else deleted.
func setDeleted(t *testing.T, c *framework.Client) error {
	n := newCount(t, c, "/errs/deleted", 1)
	require.NoError(t, c.Delete(ctxT(t, 10*time.Second), "/errs/deleted", -1))
	_, err := n.Set(ctxT(t, 10*time.Second), 2)
	return err
}

// A node this client may not read fails Start at once with the server's
// refusal, instead of waiting out ctx for a read that can never succeed.
func TestStartOnANodeItMayNotReadFailsWithNoAuth(t *testing.T) {
	cl := zktest.Standalone(t)
	alice := newClient(t, cl.Addrs(), framework.WithDigestAuth("alice", "pw"))
	_, err := alice.Create(ctxT(t, 10*time.Second), "/acl", nil)
	require.NoError(t, err)
	_, err = alice.Create(ctxT(t, 10*time.Second), "/acl/count", shared.EncodeCount(1), framework.WithACL(zk.DigestACL(zk.PermAll, "alice", "pw")))
	require.NoError(t, err)

	n, err := shared.NewCount(newClient(t, cl.Addrs()), "/acl/count", 0)
	require.NoError(t, err)
	defer n.Close()
	start := time.Now()
	err = n.Start(ctxT(t, 30*time.Second))
	assert.ErrorIs(t, err, zk.ErrNoAuth)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.ErrorIs(t, n.Err(), zkrecipes.ErrNotStarted)
}
