package countdown_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/internal/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
)

// nilCtx is a nil context, which a caller may pass by mistake.
var nilCtx context.Context

// Bad input is refused with a typed error before anything is sent, and
// leaves nothing on the server.
func TestBadInputIsRefusedBeforeAnythingIsSent(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	newErr := func(client *framework.Client, path string, count int, opts ...countdown.Option) func() error {
		return func() error {
			l, err := countdown.New(client, path, count, opts...)
			assert.Nil(t, l)
			return err
		}
	}
	closed := newLatch(t, c, "/bad/closed", 1)
	require.NoError(t, closed.Close())
	require.NoError(t, closed.Close(), "Close is idempotent")
	ok := newLatch(t, c, "/bad/ok", 1)
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"nil client":         testkit.Fails(newErr(nil, "/bad/l", 1), zkrecipes.ErrInvalidArgument, zkrecipes.ErrInvalidArgument),
		"negative count":     testkit.Fails(newErr(c, "/bad/l", -1), zkrecipes.ErrInvalidArgument, zkrecipes.ErrInvalidArgument),
		"count beyond int32": testkit.Fails(newErr(c, "/bad/l", math.MaxInt32+1), zkrecipes.ErrInvalidArgument),
		"empty path":         testkit.Fails(newErr(c, "", 1), zkrecipes.ErrInvalidPath),
		"relative path":      testkit.Fails(newErr(c, "bad/l", 1), zkrecipes.ErrInvalidPath),
		"trailing slash":     testkit.Fails(newErr(c, "/bad/l/", 1), zkrecipes.ErrInvalidPath),
		"root":               testkit.Fails(newErr(c, "/", 1), zkrecipes.ErrInvalidPath),
		"empty participant":  testkit.Fails(newErr(c, "/bad/l", 1, countdown.WithParticipantID("")), zkrecipes.ErrInvalidArgument),
		"TrySetCount closed": testkit.Fails(func() error { _, err := closed.TrySetCount(ctxT(t, time.Second)); return err }, zkrecipes.ErrClosed),
		"CountDown closed":   testkit.Fails(func() error { _, err := closed.CountDown(ctxT(t, time.Second)); return err }, zkrecipes.ErrClosed),
		"Await closed":       testkit.Fails(func() error { return closed.Await(ctxT(t, time.Second)) }, zkrecipes.ErrClosed),
		"Count closed":       testkit.Fails(func() error { _, err := closed.Count(ctxT(t, time.Second)); return err }, zkrecipes.ErrClosed),
		"nil context":        testkit.Fails(func() error { _, err := ok.CountDown(nilCtx); return err }, zkrecipes.ErrInvalidArgument),
		"cancelled context":  testkit.Fails(func() error { _, err := ok.TrySetCount(testkit.Cancelled()); return err }, context.Canceled),
		"expired context":    testkit.Fails(func() error { _, err := ok.CountDown(testkit.Expired()); return err }, context.DeadlineExceeded),
		"await expired":      testkit.Fails(func() error { return ok.Await(testkit.Expired()) }, context.DeadlineExceeded),
	})
	assert.False(t, exists(t, c, "/bad"), "nothing was made")
}

// A node at the path that is not a latch is left alone.
func TestANodeThatIsNotALatchIsRefused(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, err := c.Create(ctxT(t, 10*time.Second), "/notlatch", []byte("hello"))
	require.NoError(t, err)
	// A SharedCount node with a count but no gen- child: not ours either.
	_, err = c.Create(ctxT(t, 10*time.Second), "/sharedcount", encode(3))
	require.NoError(t, err)
	a := newLatch(t, c, "/notlatch", 1)
	b := newLatch(t, c, "/sharedcount", 1)
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"TrySetCount": testkit.Fails(func() error { _, err := a.TrySetCount(ctxT(t, 5*time.Second)); return err }, zkrecipes.ErrBadData),
		"CountDown":   testkit.Fails(func() error { _, err := a.CountDown(ctxT(t, 5*time.Second)); return err }, zkrecipes.ErrBadData),
		"Count":       testkit.Fails(func() error { _, err := a.Count(ctxT(t, 5*time.Second)); return err }, zkrecipes.ErrBadData),
		"Await":       testkit.Fails(func() error { return a.Await(ctxT(t, 5*time.Second)) }, zkrecipes.ErrBadData),
		"no gen set":  testkit.Fails(func() error { _, err := b.TrySetCount(ctxT(t, 5*time.Second)); return err }, zkrecipes.ErrBadData),
		"no gen down": testkit.Fails(func() error { _, err := b.CountDown(ctxT(t, 5*time.Second)); return err }, zkrecipes.ErrBadData),
	})
	data, _, err := c.Get(ctxT(t, 5*time.Second), "/notlatch")
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
	assert.Equal(t, 3, rawCount(t, c, "/sharedcount"))
}

// Close ends a wait in progress with zkrecipes.ErrClosed.
func TestCloseEndsAnAwaitInProgress(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := setLatch(t, c, "/latches/close", 1)
	got := awaitAsync(ctxT(t, 30*time.Second), l)
	stillWaiting(t, got, absenceWindow)
	require.NoError(t, l.Close())
	assert.ErrorIs(t, receive(t, got, 10*time.Second), zkrecipes.ErrClosed)
}

// Closing the client ends a wait in progress with zkrecipes.ErrClosed.
func TestClosingTheClientEndsAnAwaitInProgress(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	setLatch(t, newClient(t, cl.Addrs()), "/latches/close-client", 1)
	l := newLatch(t, c, "/latches/close-client", 0)
	got := awaitAsync(ctxT(t, 30*time.Second), l)
	stillWaiting(t, got, absenceWindow)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, receive(t, got, 10*time.Second), zkrecipes.ErrClosed)
}
