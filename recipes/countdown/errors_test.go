package countdown_test

import (
	"context"
	"errors"
	"math"
	"strings"
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

// failure is a row of an errors table: call must fail with an error that
// matches each of want, is a *framework.RecipeError, and whose message
// begins with prefix ("countdown <path>: ").
type failure struct {
	prefix string
	call   func() error
	want   []error
}

func fails(prefix string, call func() error, want ...error) failure {
	return failure{prefix: prefix, call: call, want: want}
}

func matchFailures(t *testing.T, rows map[string]failure) {
	t.Helper()
	for name, row := range rows {
		t.Run(name, func(t *testing.T) {
			err := row.call()
			require.Error(t, err)
			for _, want := range row.want {
				assert.ErrorIs(t, err, want)
			}
			var re *framework.RecipeError
			assert.True(t, errors.As(err, &re), "%v is not a *framework.RecipeError", err)
			assert.True(t, strings.HasPrefix(err.Error(), row.prefix), "%q does not begin with %q", err, row.prefix)
		})
	}
}

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
		nilP    = "countdown : "
	)
	invalid, noPath, isClosed, bad := zkrecipes.ErrInvalidArgument, zkrecipes.ErrInvalidPath, zkrecipes.ErrClosed, zkrecipes.ErrBadData
	matchFailures(t, map[string]failure{
		"New: nil client":         fails(badL, newErr(nil, "/bad/l", 1), invalid),
		"New: negative count":     fails(badL, newErr(c, "/bad/l", -1), invalid),
		"New: count beyond int32": fails(badL, newErr(c, "/bad/l", math.MaxInt32+1), invalid),
		"New: empty path":         fails("countdown : ", newErr(c, "", 1), noPath),
		"New: relative path":      fails("countdown bad/l: ", newErr(c, "bad/l", 1), noPath),
		"New: trailing slash":     fails("countdown /bad/l/: ", newErr(c, "/bad/l/", 1), noPath),
		"New: root":               fails("countdown /: ", newErr(c, "/", 1), noPath),
		"New: empty participant":  fails(badL, newErr(c, "/bad/l", 1, countdown.WithParticipantID("")), invalid),
		"New: participant too large": fails(badL, newErr(c, "/bad/l", 1, countdown.WithParticipantID(strings.Repeat("i", framework.DefaultMaxRequestSize))),
			invalid, zkrecipes.ErrTooLarge),

		"TrySetCount: closed": fails(closedP, func() error { _, err := closed.TrySetCount(ctx()); return err }, isClosed),
		"CountDown: closed":   fails(closedP, func() error { _, err := closed.CountDown(ctx()); return err }, isClosed),
		"Wait: closed":        fails(closedP, func() error { return closed.Wait(ctx()) }, isClosed),
		"Count: closed":       fails(closedP, func() error { _, err := closed.Count(ctx()); return err }, isClosed),

		"TrySetCount: client closed": fails(ccP, func() error { _, err := onClosed.TrySetCount(ctx()); return err }, isClosed),
		"CountDown: client closed":   fails(ccP, func() error { _, err := onClosed.CountDown(ctx()); return err }, isClosed),
		"Wait: client closed":        fails(ccP, func() error { return onClosed.Wait(ctx()) }, isClosed),
		"Count: client closed":       fails(ccP, func() error { _, err := onClosed.Count(ctx()); return err }, isClosed),

		"TrySetCount: nil context":       fails(okP, func() error { _, err := ok.TrySetCount(nilCtx); return err }, invalid),
		"CountDown: nil context":         fails(okP, func() error { _, err := ok.CountDown(nilCtx); return err }, invalid),
		"Wait: nil context":              fails(okP, func() error { return ok.Wait(nilCtx) }, invalid),
		"Count: nil context":             fails(okP, func() error { _, err := ok.Count(nilCtx); return err }, invalid),
		"TrySetCount: cancelled context": fails(okP, func() error { _, err := ok.TrySetCount(testkit.Cancelled()); return err }, context.Canceled),
		"CountDown: expired context":     fails(okP, func() error { _, err := ok.CountDown(testkit.Expired()); return err }, context.DeadlineExceeded),
		"Wait: expired context":          fails(okP, func() error { return ok.Wait(testkit.Expired()) }, context.DeadlineExceeded),
		"Count: cancelled context":       fails(okP, func() error { _, err := ok.Count(testkit.Cancelled()); return err }, context.Canceled),

		"TrySetCount: not a latch":    fails(notP, func() error { _, err := a.TrySetCount(ctx()); return err }, bad),
		"CountDown: not a latch":      fails(notP, func() error { _, err := a.CountDown(ctx()); return err }, bad),
		"Count: not a latch":          fails(notP, func() error { _, err := a.Count(ctx()); return err }, bad),
		"Wait: not a latch":           fails(notP, func() error { return a.Wait(ctx()) }, bad),
		"TrySetCount: no gen- child":  fails(scP, func() error { _, err := b.TrySetCount(ctx()); return err }, bad),
		"CountDown: no gen- child":    fails(scP, func() error { _, err := b.CountDown(ctx()); return err }, bad),
		"TrySetCount: nil receiver":   fails(nilP, func() error { _, err := nilL.TrySetCount(ctx()); return err }, invalid),
		"CountDown: nil receiver":     fails(nilP, func() error { _, err := nilL.CountDown(ctx()); return err }, invalid),
		"Wait: nil receiver":          fails(nilP, func() error { return nilL.Wait(ctx()) }, invalid),
		"Count: nil receiver":         fails(nilP, func() error { _, err := nilL.Count(ctx()); return err }, invalid),
		"Close: nil receiver":         fails(nilP, nilL.Close, invalid),
		"CountDown: zero Countdown":   fails(nilP, func() error { _, err := zero.CountDown(ctx()); return err }, invalid),
		"Close: zero Countdown":       fails(nilP, zero.Close, invalid),
		"TrySetCount: zero Countdown": fails(nilP, func() error { _, err := zero.TrySetCount(ctx()); return err }, invalid),
		"Wait: zero Countdown":        fails(nilP, func() error { return zero.Wait(ctx()) }, invalid),
		"Count: zero Countdown":       fails(nilP, func() error { _, err := zero.Count(ctx()); return err }, invalid),
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
