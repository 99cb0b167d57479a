package mutex_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// exists reports whether path exists, as c sees it.
func exists(t *testing.T, c *framework.Client, path string) bool {
	t.Helper()
	ok, _, err := c.Exists(ctxT(t, 10*time.Second), path)
	require.NoError(t, err)
	return ok
}

func TestFencedWriteCommitsWhileHeld(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	mustCreateNode(t, c, "/cfg", "v0")
	h, err := newMutex(t, c, "/locks/f").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	res, err := h.Fenced(ctxT(t, 10*time.Second),
		&zk.SetDataRequest{Path: "/cfg", Data: []byte("v1"), Version: 0},
		&zk.CreateRequest{Path: "/cfg/log-", Data: []byte("by the holder"), Flags: zk.FlagSequence},
	)
	require.NoError(t, err)
	require.Len(t, res, 2, "one result per op, the check left out")
	assert.Equal(t, int32(1), res[0].Stat.Version)
	assert.Equal(t, "/cfg/log-0000000000", res[1].String)
	data, _, err := c.Get(ctxT(t, 10*time.Second), "/cfg")
	require.NoError(t, err)
	assert.Equal(t, "v1", string(data))
	assert.NoError(t, h.Err(), "the hold stands")
}

func TestFencedWriteFailsOnceTheNodeIsDeletedEvenBeforeTheHoldKnows(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs())
	other := newClient(t, cl.Addrs())
	h, err := newMutex(t, c, "/locks/f").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	// Everything the server sends the holder arrives 500ms late, the
	// event that its node is gone included: the write below leaves
	// before the holder can know.
	p.LagReplies(500 * time.Millisecond)
	require.NoError(t, other.Delete(ctxT(t, 10*time.Second), h.Path(), -1))
	select {
	case <-h.Done():
		t.Fatal("the hold learnt of the delete before the write: the test proves nothing")
	default:
	}
	_, err = h.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/written"})
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrNodeDeleted)
	assert.False(t, exists(t, other, "/written"), "a write by a holder whose node is gone committed")

	// The failed write ends the hold at once, and the next is refused
	// before it is sent.
	testkit.WaitClosed(t, h.Done(), time.Second, "the hold did not end with the failed fenced write")
	assert.ErrorIs(t, h.Err(), zkrecipes.ErrNodeDeleted)
	_, err = h.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/written"})
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrNodeDeleted)
}

// A write queued while the link is down goes out once it is back, on
// whatever session the client has then: after the old one expired, it must
// not commit. The session-only policy keeps the hold trusted through the
// cut, so that the write is sent at all.
func TestFencedWriteSentAfterTheSessionExpiredDoesNotCommit(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	other := newClient(t, cl.Addrs())
	h, err := newMutex(t, c, "/locks/f").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	session := c.Session().ID

	p.Blackhole()
	require.Eventually(t, func() bool { return !c.State().IsConnected() }, 10*time.Second, 10*time.Millisecond,
		"the client did not notice its link was down")
	require.NoError(t, h.Err(), "the hold must still be trusted when the write is made")
	out := make(chan error, 1)
	go func() {
		_, err := h.Fenced(ctxT(t, 60*time.Second), &zk.CreateRequest{Path: "/written"})
		out <- err
	}()
	require.Eventually(t, func() bool { return !cl.SessionAlive(session) }, 30*time.Second, 50*time.Millisecond,
		"the server did not expire the session")
	p.Heal()

	select {
	case err = <-out:
	case <-time.After(30 * time.Second):
		t.Fatal("the fenced write never returned")
	}
	t.Logf("fenced write: %v", err)
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.ErrorIs(t, err, zkrecipes.ErrSessionLost)
	assert.False(t, exists(t, other, "/written"), "a write of an expired session's holder committed")
}

func TestFencedAfterReleaseIsErrReleasedAndSendsNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	h, err := newMutex(t, c, "/locks/f").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, h.Release())

	_, err = h.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/written"})
	assert.ErrorIs(t, err, zkrecipes.ErrReleased)
	assert.NotErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.False(t, exists(t, c, "/written"))
}

func TestFencedUserOpFailureIsThatOpsErrorAndCommitsNothing(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	mustCreateNode(t, c, "/cfg", "v0")
	h, err := newMutex(t, c, "/locks/f").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	_, err = h.Fenced(ctxT(t, 10*time.Second),
		&zk.CreateRequest{Path: "/written"},
		&zk.SetDataRequest{Path: "/cfg", Data: []byte("v1"), Version: 7},
	)
	require.ErrorIs(t, err, zk.ErrBadVersion)
	assert.NotErrorIs(t, err, zkrecipes.ErrHoldLost)
	var me *framework.MultiOpError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, 1, me.Index, "the index among the caller's ops")
	assert.Equal(t, "/cfg", me.Path)
	assert.False(t, exists(t, c, "/written"), "part of a failed multi committed")
	assert.NoError(t, h.Err(), "the hold stands")
}

func TestFencedRefusesBadInputBeforeSending(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	h, err := newMutex(t, c, "/locks/f").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	ok := &zk.CreateRequest{Path: "/written"}
	for name, tc := range map[string]struct {
		ops  []any
		want error
	}{
		"no ops":            {nil, zkrecipes.ErrInvalidArgument},
		"nil op":            {[]any{ok, nil}, zkrecipes.ErrInvalidArgument},
		"typed nil op":      {[]any{ok, (*zk.SetDataRequest)(nil)}, zkrecipes.ErrInvalidArgument},
		"unsupported op":    {[]any{ok, "delete /x"}, zkrecipes.ErrInvalidArgument},
		"invalid path":      {[]any{ok, &zk.CreateRequest{Path: "x/"}}, zkrecipes.ErrInvalidPath},
		"container create":  {[]any{ok, &zk.CreateRequest{Path: "/c", Flags: zk.FlagContainer}}, zkrecipes.ErrUnsupportedInMulti},
		"TTL create":        {[]any{ok, &zk.CreateRequest{Path: "/c", Flags: zk.FlagTTL}}, zkrecipes.ErrUnsupportedInMulti},
		"cancelled context": {[]any{ok}, context.Canceled},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t, 10*time.Second)
			if errors.Is(tc.want, context.Canceled) {
				ctx = testkit.Cancelled()
			}
			_, err := h.Fenced(ctx, tc.ops...)
			assert.ErrorIs(t, err, tc.want)
			assert.NotErrorIs(t, err, zkrecipes.ErrOutcomeUnknown)
			assert.False(t, exists(t, c, "/written"))
		})
	}
	assert.NoError(t, h.Err(), "bad input does not end the hold")
}

// A reply lost after the server applied the write: Fenced says the outcome
// is unknown and does not send the write again (a plain Multi would, and a
// sequential create would commit twice).
func TestFencedWriteWithALostReplyIsNotSentAgain(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := newClient(t, p.Addrs(), framework.WithErrorPolicy(framework.SessionOnlyPolicy))
	mustCreateNode(t, c, "/log", "")
	h, err := newMutex(t, c, "/locks/f").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)

	p.DropReplies()
	out := make(chan error, 1)
	go func() {
		_, err := h.Fenced(ctxT(t, 60*time.Second), &zk.CreateRequest{Path: "/log/e-", Flags: zk.FlagSequence})
		out <- err
	}()
	other := newClient(t, cl.Addrs())
	testkit.WaitChildren(t, other, "/log", 1) // applied by the server
	p.Heal()
	select {
	case err = <-out:
	case <-time.After(30 * time.Second):
		t.Fatal("the fenced write never returned")
	}
	assert.ErrorIs(t, err, zkrecipes.ErrOutcomeUnknown)
	assert.NotErrorIs(t, err, zkrecipes.ErrHoldLost)
	// Give a resend every chance to land, then count.
	_, err = c.WaitConnected(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	require.NoError(t, c.Sync(ctxT(t, 10*time.Second), "/log"))
	assert.Len(t, testkit.Children(t, other, "/log"), 1, "the write was sent again")
}

func TestFencedOnASemaphoreMutexHold(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	other := newClient(t, cl.Addrs())
	h, err := newSemaphoreMutex(t, c, "/locks/sm").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	_, err = h.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/a"})
	require.NoError(t, err)
	require.NoError(t, other.Delete(ctxT(t, 10*time.Second), h.Path(), -1))
	_, err = h.Fenced(ctxT(t, 10*time.Second), &zk.CreateRequest{Path: "/b"})
	assert.ErrorIs(t, err, zkrecipes.ErrHoldLost)
	assert.True(t, strings.Contains(h.Path(), "lease-"), "the hold's node is its lease: %s", h.Path())
	assert.False(t, exists(t, other, "/b"))
}

func mustCreateNode(t *testing.T, c *framework.Client, path, data string) {
	t.Helper()
	_, err := c.Create(ctxT(t, 10*time.Second), path, []byte(data))
	require.NoError(t, err)
}
