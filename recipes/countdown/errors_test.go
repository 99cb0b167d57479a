package countdown_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/countdown"
)

// nilCtx is a nil context, which a caller may pass by mistake.
var nilCtx context.Context

// Every failure of the package's exported API matches the sentinel its
// documentation names (errors.Is) and names the latch's path; bad input is
// refused before anything is sent, and no failure changes a node that is
// not a latch.
func TestEveryFailureMatchesItsSentinelAndNamesTheLatch(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	ctx := func() context.Context { return ctxT(t, 10*time.Second) }
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
	closedClient := newClient(t, cl.Addrs())
	onClosed := newLatch(t, closedClient, "/bad/client-closed", 1)
	require.NoError(t, closedClient.Close())

	// Nodes that are not latches: someone's data, and a SharedCount's
	// count with no gen- child.
	_, err := c.Create(ctx(), "/notlatch", []byte("hello"))
	require.NoError(t, err)
	_, err = c.Create(ctx(), "/sharedcount", encode(3))
	require.NoError(t, err)
	a := newLatch(t, c, "/notlatch", 1)
	b := newLatch(t, c, "/sharedcount", 1)

	var nilL *countdown.Countdown
	zero := &countdown.Countdown{}
	const (
		badL    = "countdown /bad/l: "
		closedP = "countdown /bad/closed: "
		okP     = "countdown /bad/ok: "
		ccP     = "countdown /bad/client-closed: "
		notP    = "countdown /notlatch: "
		scP     = "countdown /sharedcount: "
		nilP    = "countdown: "
	)
	invalid, noPath, isClosed, bad := zkrecipes.ErrInvalidArgument, zkrecipes.ErrInvalidPath, zkrecipes.ErrClosed, zkrecipes.ErrBadData
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"New: nil client":         testkit.Named(badL, newErr(nil, "/bad/l", 1), invalid),
		"New: negative count":     testkit.Named(badL, newErr(c, "/bad/l", -1), invalid),
		"New: count beyond int32": testkit.Named(badL, newErr(c, "/bad/l", math.MaxInt32+1), invalid),
		"New: empty path":         testkit.Named("countdown: ", newErr(c, "", 1), noPath),
		"New: relative path":      testkit.Named("countdown bad/l: ", newErr(c, "bad/l", 1), noPath),
		"New: trailing slash":     testkit.Named("countdown /bad/l/: ", newErr(c, "/bad/l/", 1), noPath),
		"New: root":               testkit.Named("countdown /: ", newErr(c, "/", 1), noPath),
		"New: empty participant":  testkit.Named(badL, newErr(c, "/bad/l", 1, countdown.WithParticipantID("")), invalid),
		"New: participant too large": testkit.Named(badL, newErr(c, "/bad/l", 1, countdown.WithParticipantID(strings.Repeat("i", framework.DefaultMaxRequestSize))),
			invalid, zkrecipes.ErrTooLarge),

		"TrySetCount: closed": testkit.Named(closedP, func() error { _, err := closed.TrySetCount(ctx()); return err }, isClosed),
		"CountDown: closed":   testkit.Named(closedP, func() error { _, err := closed.CountDown(ctx()); return err }, isClosed),
		"Wait: closed":        testkit.Named(closedP, func() error { return closed.Wait(ctx()) }, isClosed),
		"Count: closed":       testkit.Named(closedP, func() error { _, err := closed.Count(ctx()); return err }, isClosed),

		"TrySetCount: client closed": testkit.Named(ccP, func() error { _, err := onClosed.TrySetCount(ctx()); return err }, isClosed),
		"CountDown: client closed":   testkit.Named(ccP, func() error { _, err := onClosed.CountDown(ctx()); return err }, isClosed),
		"Wait: client closed":        testkit.Named(ccP, func() error { return onClosed.Wait(ctx()) }, isClosed),
		"Count: client closed":       testkit.Named(ccP, func() error { _, err := onClosed.Count(ctx()); return err }, isClosed),

		"TrySetCount: nil context":       testkit.Named(okP, func() error { _, err := ok.TrySetCount(nilCtx); return err }, invalid),
		"CountDown: nil context":         testkit.Named(okP, func() error { _, err := ok.CountDown(nilCtx); return err }, invalid),
		"Wait: nil context":              testkit.Named(okP, func() error { return ok.Wait(nilCtx) }, invalid),
		"Count: nil context":             testkit.Named(okP, func() error { _, err := ok.Count(nilCtx); return err }, invalid),
		"TrySetCount: cancelled context": testkit.Named(okP, func() error { _, err := ok.TrySetCount(testkit.Cancelled()); return err }, context.Canceled),
		"CountDown: expired context":     testkit.Named(okP, func() error { _, err := ok.CountDown(testkit.Expired()); return err }, context.DeadlineExceeded),
		"Wait: expired context":          testkit.Named(okP, func() error { return ok.Wait(testkit.Expired()) }, context.DeadlineExceeded),
		"Count: cancelled context":       testkit.Named(okP, func() error { _, err := ok.Count(testkit.Cancelled()); return err }, context.Canceled),

		"TrySetCount: not a latch":    testkit.Named(notP, func() error { _, err := a.TrySetCount(ctx()); return err }, bad),
		"CountDown: not a latch":      testkit.Named(notP, func() error { _, err := a.CountDown(ctx()); return err }, bad),
		"Count: not a latch":          testkit.Named(notP, func() error { _, err := a.Count(ctx()); return err }, bad),
		"Wait: not a latch":           testkit.Named(notP, func() error { return a.Wait(ctx()) }, bad),
		"TrySetCount: no gen- child":  testkit.Named(scP, func() error { _, err := b.TrySetCount(ctx()); return err }, bad),
		"CountDown: no gen- child":    testkit.Named(scP, func() error { _, err := b.CountDown(ctx()); return err }, bad),
		"TrySetCount: nil receiver":   testkit.Named(nilP, func() error { _, err := nilL.TrySetCount(ctx()); return err }, invalid),
		"CountDown: nil receiver":     testkit.Named(nilP, func() error { _, err := nilL.CountDown(ctx()); return err }, invalid),
		"Wait: nil receiver":          testkit.Named(nilP, func() error { return nilL.Wait(ctx()) }, invalid),
		"Count: nil receiver":         testkit.Named(nilP, func() error { _, err := nilL.Count(ctx()); return err }, invalid),
		"Close: nil receiver":         testkit.Named(nilP, nilL.Close, invalid),
		"CountDown: zero Countdown":   testkit.Named(nilP, func() error { _, err := zero.CountDown(ctx()); return err }, invalid),
		"Close: zero Countdown":       testkit.Named(nilP, zero.Close, invalid),
		"TrySetCount: zero Countdown": testkit.Named(nilP, func() error { _, err := zero.TrySetCount(ctx()); return err }, invalid),
		"Wait: zero Countdown":        testkit.Named(nilP, func() error { return zero.Wait(ctx()) }, invalid),
		"Count: zero Countdown":       testkit.Named(nilP, func() error { _, err := zero.Count(ctx()); return err }, invalid),
	})
	assert.Empty(t, nilL.Path()+zero.Path(), "the path of a nil or zero Countdown")
	assert.False(t, exists(t, c, "/bad"), "nothing was made")
	data, _, err := c.Get(ctx(), "/notlatch")
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
	assert.Equal(t, 3, rawCount(t, c, "/sharedcount"))
}

// Close ends a wait in progress with zkrecipes.ErrClosed.
func TestCloseEndsAWaitInProgress(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := setLatch(t, c, "/latches/close", 1)
	got := waitAsync(ctxT(t, 30*time.Second), l)
	stillWaiting(t, got, absenceWindow)
	require.NoError(t, l.Close())
	assert.ErrorIs(t, receive(t, got, 10*time.Second), zkrecipes.ErrClosed)
}

// Closing the client ends a wait in progress with zkrecipes.ErrClosed.
func TestClosingTheClientEndsAWaitInProgress(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	setLatch(t, newClient(t, cl.Addrs()), "/latches/close-client", 1)
	l := newLatch(t, c, "/latches/close-client", 0)
	got := waitAsync(ctxT(t, 30*time.Second), l)
	stillWaiting(t, got, absenceWindow)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, receive(t, got, 10*time.Second), zkrecipes.ErrClosed)
}
