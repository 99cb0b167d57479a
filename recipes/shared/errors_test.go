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
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// Every failure of the package's API matches the sentinel its
// documentation names (errors.Is) and names the recipe and its path, bad
// input fails before anything is sent, and no failure leaves a node
// behind.
func TestEveryFailureMatchesItsSentinelAndNamesTheValue(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())

	unstarted, err := shared.NewCount(c, "/errs/unstarted", 1)
	require.NoError(t, err)
	unstartedValue, err := shared.NewValue(c, "/errs/unstarted-value", nil)
	require.NoError(t, err)
	started := newCount(t, c, "/errs/started", 1)
	startedValue := newValue(t, c, "/errs/started-value", nil)
	closed := newCount(t, c, "/errs/closed", 1)
	closedGet, err := closed.Get()
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	closedValue := newValue(t, c, "/errs/closed-value", nil)
	closedValueGet, err := closedValue.Get()
	require.NoError(t, err)
	require.NoError(t, closedValue.Close())
	closedClient := newClient(t, cl.Addrs())
	onClosedClient := newCount(t, closedClient, "/errs/closed-client", 1)
	require.NoError(t, closedClient.Close())
	neverStarts, err := shared.NewCount(closedClient, "/errs/never", 1)
	require.NoError(t, err)
	unversioned := shared.Versioned[int32]{Value: 1, Version: -1, Zxid: -1}
	// A count whose node someone set to data that is not a count.
	notCount := newCount(t, c, "/errs/not-a-count", 1)
	_, err = c.Set(ctxT(t, 10*time.Second), "/errs/not-a-count", []byte("abc"), -1)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := notCount.Get()
		assert.ErrorIs(ct, err, zkrecipes.ErrBadData)
	}, 10*time.Second, 10*time.Millisecond)

	var nilCount *shared.Count
	var nilValue *shared.Value
	zeroCount, zeroValue := &shared.Count{}, &shared.Value{}
	var nilCtx context.Context

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
	const (
		cX      = "shared count /x: "
		vX      = "shared value /x: "
		cUnst   = "shared count /errs/unstarted: "
		vUnst   = "shared value /errs/unstarted-value: "
		cStart  = "shared count /errs/started: "
		vStart  = "shared value /errs/started-value: "
		cClosed = "shared count /errs/closed: "
		vClosed = "shared value /errs/closed-value: "
		cCC     = "shared count /errs/closed-client: "
		cNever  = "shared count /errs/never: "
		cNot    = "shared count /errs/not-a-count: "
		cNil    = "shared count: "
		vNil    = "shared value: "
	)
	invalid, noPath, isClosed := zkrecipes.ErrInvalidArgument, zkrecipes.ErrInvalidPath, zkrecipes.ErrClosed

	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"NewCount: nil client": testkit.Named(cX, func() error { _, err := shared.NewCount(nil, "/x", 1); return err }, invalid),
		"NewCount: bad path":   testkit.Named("shared count x/: ", func() error { _, err := shared.NewCount(c, "x/", 1); return err }, noPath),
		"NewCount: the root":   testkit.Named("shared count /: ", func() error { _, err := shared.NewCount(c, "/", 1); return err }, noPath),
		"NewValue: nil client": testkit.Named(vX, func() error { _, err := shared.NewValue(nil, "/x", nil); return err }, invalid),
		"NewValue: bad path":   testkit.Named("shared value /x/: ", func() error { _, err := shared.NewValue(c, "/x/", nil); return err }, noPath),
		"NewValue: empty path": testkit.Named("shared value: ", func() error { _, err := shared.NewValue(c, "", nil); return err }, noPath),
		"NewValue: the root":   testkit.Named("shared value /: ", func() error { _, err := shared.NewValue(c, "/", nil); return err }, noPath),
		"NewValue: seed too large": testkit.Named(vX, func() error {
			_, err := shared.NewValue(c, "/x", make([]byte, framework.DefaultMaxRequestSize))
			return err
		}, zkrecipes.ErrTooLarge),

		"Count.Get: not started":    testkit.Named(cUnst, get(unstarted), zkrecipes.ErrNotStarted),
		"Count.Set: not started":    testkit.Named(cUnst, set(unstarted), zkrecipes.ErrNotStarted),
		"Count.TrySet: not started": testkit.Named(cUnst, trySet(unstarted, closedGet), zkrecipes.ErrNotStarted),
		"Count.Err: not started":    testkit.Named(cUnst, unstarted.Err, zkrecipes.ErrNotStarted),
		"Value.Get: not started":    testkit.Named(vUnst, func() error { _, err := unstartedValue.Get(); return err }, zkrecipes.ErrNotStarted),
		"Value.Set: not started":    testkit.Named(vUnst, func() error { _, err := unstartedValue.Set(ctx10(), nil); return err }, zkrecipes.ErrNotStarted),
		"Value.TrySet: not started": testkit.Named(vUnst, func() error { _, _, err := unstartedValue.TrySet(ctx10(), closedValueGet, nil); return err }, zkrecipes.ErrNotStarted),
		"Value.Err: not started":    testkit.Named(vUnst, unstartedValue.Err, zkrecipes.ErrNotStarted),

		"Count.Start: twice":         testkit.Named(cStart, func() error { return started.Start(ctx10()) }, zkrecipes.ErrStarted),
		"Value.Start: twice":         testkit.Named(vStart, func() error { return startedValue.Start(ctx10()) }, zkrecipes.ErrStarted),
		"Count.Start: cancelled":     testkit.Named(cUnst, func() error { return unstarted.Start(testkit.Cancelled()) }, context.Canceled),
		"Value.Start: cancelled":     testkit.Named(vUnst, func() error { return unstartedValue.Start(testkit.Cancelled()) }, context.Canceled),
		"Count.Start: nil context":   testkit.Named(cUnst, func() error { return unstarted.Start(nilCtx) }, invalid),
		"Value.Start: nil context":   testkit.Named(vUnst, func() error { return unstartedValue.Start(nilCtx) }, invalid),
		"Count.Start: client closed": testkit.Named(cNever, func() error { return neverStarts.Start(ctx10()) }, isClosed),
		"Count.Start: after Close":   testkit.Named(cClosed, func() error { return closed.Start(ctx10()) }, isClosed),
		"Value.Start: after Close":   testkit.Named(vClosed, func() error { return closedValue.Start(ctx10()) }, isClosed),

		"Count.TrySet: unversioned": testkit.Named(cStart, trySet(started, unversioned), shared.ErrUnversioned),
		"Value.TrySet: unversioned": testkit.Named(vStart, func() error {
			_, _, err := startedValue.TrySet(ctx10(), shared.Versioned[[]byte]{Version: -1}, nil)
			return err
		}, shared.ErrUnversioned),
		"Count.Set: nil context":      testkit.Named(cStart, func() error { _, err := started.Set(nilCtx, 2); return err }, invalid),
		"Count.TrySet: nil context":   testkit.Named(cStart, func() error { _, _, err := started.TrySet(nilCtx, closedGet, 2); return err }, invalid),
		"Value.Set: nil context":      testkit.Named(vStart, func() error { _, err := startedValue.Set(nilCtx, nil); return err }, invalid),
		"Value.TrySet: nil context":   testkit.Named(vStart, func() error { _, _, err := startedValue.TrySet(nilCtx, closedValueGet, nil); return err }, invalid),
		"Count.Set: deadline":         testkit.Named(cStart, func() error { _, err := started.Set(testkit.Expired(), 2); return err }, context.DeadlineExceeded),
		"Count.Get: closed":           testkit.Named(cClosed, get(closed), isClosed),
		"Count.Set: closed":           testkit.Named(cClosed, set(closed), isClosed),
		"Count.TrySet: closed":        testkit.Named(cClosed, trySet(closed, closedGet), isClosed),
		"Count.Err: closed":           testkit.Named(cClosed, closed.Err, isClosed),
		"Value.Get: closed":           testkit.Named(vClosed, func() error { _, err := closedValue.Get(); return err }, isClosed),
		"Value.Set: closed":           testkit.Named(vClosed, func() error { _, err := closedValue.Set(ctx10(), nil); return err }, isClosed),
		"Value.TrySet: closed":        testkit.Named(vClosed, func() error { _, _, err := closedValue.TrySet(ctx10(), closedValueGet, nil); return err }, isClosed),
		"Value.Err: closed":           testkit.Named(vClosed, closedValue.Err, isClosed),
		"Count.Set: client closed":    testkit.Named(cCC, set(onClosedClient), isClosed),
		"Count.TrySet: client closed": testkit.Named(cCC, trySet(onClosedClient, closedGet), isClosed),
		"Count.Err: client closed":    testkit.Named(cCC, onClosedClient.Err, isClosed),
		"Count.Get: client closed":    testkit.Named(cCC, get(onClosedClient), isClosed),
		"Count.Get: not a count":      testkit.Named(cNot, get(notCount), zkrecipes.ErrBadData),
		"Count.Set: deleted node":     testkit.Named("shared count /errs/deleted: ", func() error { return setDeleted(t, c) }, zkrecipes.ErrNodeDeleted, zk.ErrNoNode),
		"Count.Err: deleted node":     testkit.Named("shared count /errs/deleted-err: ", func() error { return errDeleted(t, c) }, zkrecipes.ErrStale, zkrecipes.ErrNodeDeleted),
		"Count.Start: nil receiver":   testkit.Named(cNil, func() error { return nilCount.Start(ctx10()) }, invalid),
		"Count.Get: nil receiver":     testkit.Named(cNil, get(nilCount), invalid),
		"Count.Set: nil receiver":     testkit.Named(cNil, set(nilCount), invalid),
		"Count.TrySet: nil receiver":  testkit.Named(cNil, trySet(nilCount, closedGet), invalid),
		"Count.Err: nil receiver":     testkit.Named(cNil, nilCount.Err, invalid),
		"Count.Close: nil receiver":   testkit.Named(cNil, nilCount.Close, invalid),
		"Count.Start: zero Count":     testkit.Named(cNil, func() error { return zeroCount.Start(ctx10()) }, invalid),
		"Count.Close: zero Count":     testkit.Named(cNil, zeroCount.Close, invalid),
		"Value.Start: nil receiver":   testkit.Named(vNil, func() error { return nilValue.Start(ctx10()) }, invalid),
		"Value.Get: nil receiver":     testkit.Named(vNil, func() error { _, err := nilValue.Get(); return err }, invalid),
		"Value.Set: nil receiver":     testkit.Named(vNil, func() error { _, err := nilValue.Set(ctx10(), nil); return err }, invalid),
		"Value.TrySet: nil receiver":  testkit.Named(vNil, func() error { _, _, err := nilValue.TrySet(ctx10(), closedValueGet, nil); return err }, invalid),
		"Value.Err: nil receiver":     testkit.Named(vNil, nilValue.Err, invalid),
		"Value.Close: nil receiver":   testkit.Named(vNil, nilValue.Close, invalid),
		"Value.Get: zero Value":       testkit.Named(vNil, func() error { _, err := zeroValue.Get(); return err }, invalid),
		"Value.Close: zero Value":     testkit.Named(vNil, zeroValue.Close, invalid),
	})
	_, err = shared.DecodeCount([]byte{1, 2, 3})
	assert.ErrorIs(t, err, zkrecipes.ErrBadData)
	_, err = shared.DecodeCount(make([]byte, 8))
	assert.ErrorIs(t, err, zkrecipes.ErrBadData, "a long is not a count")
	for _, sub := range []interface {
		Changes() <-chan shared.Versioned[int32]
	}{nilCount.Subscribe(), zeroCount.Subscribe()} {
		_, open := <-sub.Changes()
		assert.False(t, open, "a nil or zero Count's subscription has ended")
	}
	_, open := <-nilValue.Subscribe().Changes()
	assert.False(t, open, "a nil Value's subscription has ended")
	assert.Empty(t, nilCount.Path()+nilValue.Path()+zeroCount.Path()+zeroValue.Path())

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

// errDeleted is Err of a count whose node someone else deleted, once the
// follower has seen it.
func errDeleted(t *testing.T, c *framework.Client) error {
	n := newCount(t, c, "/errs/deleted-err", 1)
	require.NoError(t, c.Delete(ctxT(t, 10*time.Second), "/errs/deleted-err", -1))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		assert.ErrorIs(ct, n.Err(), zkrecipes.ErrNodeDeleted)
	}, 10*time.Second, 10*time.Millisecond)
	return n.Err()
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
