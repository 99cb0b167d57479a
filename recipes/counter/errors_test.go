package counter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Every failure of the package's exported API, constructors and every
// method of the three counters, matches the sentinel its documentation
// names (errors.Is) and names the counter and its path; bad input fails
// before anything is sent and leaves nothing on the server.
func TestEveryFailureMatchesItsSentinelAndNamesTheCounter(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	ctx := ctxT(t, 30*time.Second)
	var nilCtx context.Context
	lock := counter.WithPromotedToLock("/errs/closed-lock", time.Second, retry.NTimes(1, 0))

	closedL, err := counter.NewLong(c, "/errs/long", lock)
	require.NoError(t, err)
	require.NoError(t, closedL.Close())
	closedI, err := counter.NewInteger(c, "/errs/int")
	require.NoError(t, err)
	require.NoError(t, closedI.Close())
	closedB, err := counter.NewBytes(c, "/errs/bytes")
	require.NoError(t, err)
	require.NoError(t, closedB.Close())

	closedClient := newClient(t, cl.Addrs())
	onClosedL := newLong(t, closedClient, "/errs/client-closed")
	onClosedB, err := counter.NewBytes(closedClient, "/errs/client-closed")
	require.NoError(t, err)
	require.NoError(t, closedClient.Close())

	// Nodes that hold no number of the counters' sizes.
	_, err = c.Create(ctx, "/bad", []byte{1, 2, 3})
	require.NoError(t, err)
	badL := newLong(t, c, "/bad")
	badI, err := counter.NewInteger(c, "/bad")
	require.NoError(t, err)
	t.Cleanup(func() { _ = badI.Close() })

	l := newLong(t, c, "/errs/ok")
	i, err := counter.NewInteger(c, "/errs/ok-int")
	require.NoError(t, err)
	t.Cleanup(func() { _ = i.Close() })
	b, err := counter.NewBytes(c, "/errs/ok-bytes")
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })

	var nilL *counter.Long
	var nilI *counter.Integer
	var nilB *counter.Bytes
	zeroL, zeroI, zeroB := &counter.Long{}, &counter.Integer{}, &counter.Bytes{}

	long := func(path string, opts ...counter.Option) func() error {
		return func() error { _, err := counter.NewLong(c, path, opts...); return err }
	}
	const (
		longA  = "long counter /a: "
		longL  = "long counter /errs/long: "
		intI   = "integer counter /errs/int: "
		bytesB = "bytes counter /errs/bytes: "
		longCC = "long counter /errs/client-closed: "
		bytCC  = "bytes counter /errs/client-closed: "
		longOK = "long counter /errs/ok: "
		intOK  = "integer counter /errs/ok-int: "
		bytOK  = "bytes counter /errs/ok-bytes: "
		longBd = "long counter /bad: "
		intBd  = "integer counter /bad: "
		nilLng = "long counter: "
		nilInt = "integer counter: "
		nilByt = "bytes counter: "
	)
	bad, closed, invalid := zkrecipes.ErrBadData, zkrecipes.ErrClosed, zkrecipes.ErrInvalidArgument
	noPath := zkrecipes.ErrInvalidPath

	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"NewLong: nil client":        testkit.Named(longA, func() error { _, err := counter.NewLong(nil, "/a"); return err }, invalid),
		"NewInteger: nil client":     testkit.Named("integer counter /a: ", func() error { _, err := counter.NewInteger(nil, "/a"); return err }, invalid),
		"NewBytes: nil client":       testkit.Named("bytes counter /a: ", func() error { _, err := counter.NewBytes(nil, "/a"); return err }, invalid),
		"NewLong: empty path":        testkit.Named("long counter: ", long(""), noPath),
		"NewLong: relative path":     testkit.Named("long counter a/b: ", long("a/b"), noPath),
		"NewLong: trailing slash":    testkit.Named("long counter /a/: ", long("/a/"), noPath),
		"NewLong: root":              testkit.Named("long counter /: ", long("/"), noPath),
		"NewInteger: root":           testkit.Named("integer counter /: ", func() error { _, err := counter.NewInteger(c, "/"); return err }, noPath),
		"NewBytes: root":             testkit.Named("bytes counter /: ", func() error { _, err := counter.NewBytes(c, "/"); return err }, noPath),
		"NewLong: bad lock path":     testkit.Named(longA, long("/a", counter.WithPromotedToLock("/l//x", time.Second, retry.NTimes(1, 0))), invalid, noPath),
		"NewLong: root lock path":    testkit.Named(longA, long("/a", counter.WithPromotedToLock("/", time.Second, retry.NTimes(1, 0))), invalid, noPath),
		"NewLong: zero lock timeout": testkit.Named(longA, long("/a", counter.WithPromotedToLock("/l", 0, retry.NTimes(1, 0))), invalid),
		"NewLong: negative timeout":  testkit.Named(longA, long("/a", counter.WithPromotedToLock("/l", -time.Second, retry.NTimes(1, 0))), invalid),
		"NewLong: lock path its own": testkit.Named(longA, long("/a", counter.WithPromotedToLock("/a", time.Second, retry.NTimes(1, 0))), invalid),
		"NewLong: empty id":          testkit.Named(longA, long("/a", counter.WithParticipantID("")), invalid),
		"NewBytes: id too large": testkit.Named("bytes counter /a: ", func() error {
			_, err := counter.NewBytes(c, "/a", counter.WithPromotedToLock("/l", time.Second, retry.Default()),
				counter.WithParticipantID(strings.Repeat("i", framework.DefaultMaxRequestSize)))
			return err
		}, invalid, zkrecipes.ErrTooLarge),

		"Long.Get: closed":           testkit.Named(longL, func() error { _, err := closedL.Get(ctx); return err }, closed),
		"Long.Increment: closed":     testkit.Named(longL, func() error { _, err := closedL.Increment(ctx); return err }, closed),
		"Long.Decrement: closed":     testkit.Named(longL, func() error { _, err := closedL.Decrement(ctx); return err }, closed),
		"Long.Add: closed":           testkit.Named(longL, func() error { _, err := closedL.Add(ctx, 2); return err }, closed),
		"Long.Subtract: closed":      testkit.Named(longL, func() error { _, err := closedL.Subtract(ctx, 2); return err }, closed),
		"Long.CompareAndSet: closed": testkit.Named(longL, func() error { _, err := closedL.CompareAndSet(ctx, 0, 1); return err }, closed),
		"Long.Swap: closed":          testkit.Named(longL, func() error { _, err := closedL.Swap(ctx, 1); return err }, closed),
		"Long.Set: closed":           testkit.Named(longL, func() error { return closedL.Set(ctx, 1) }, closed),
		"Long.Initialize: closed":    testkit.Named(longL, func() error { _, err := closedL.Initialize(ctx, 1); return err }, closed),
		"Integer.Get: closed":        testkit.Named(intI, func() error { _, err := closedI.Get(ctx); return err }, closed),
		"Integer.Increment: closed":  testkit.Named(intI, func() error { _, err := closedI.Increment(ctx); return err }, closed),
		"Integer.Decrement: closed":  testkit.Named(intI, func() error { _, err := closedI.Decrement(ctx); return err }, closed),
		"Integer.Add: closed":        testkit.Named(intI, func() error { _, err := closedI.Add(ctx, 2); return err }, closed),
		"Integer.Subtract: closed":   testkit.Named(intI, func() error { _, err := closedI.Subtract(ctx, 2); return err }, closed),
		"Integer.CompareAndSet: closed": testkit.Named(intI, func() error { _, err := closedI.CompareAndSet(ctx, 0, 1); return err },
			closed),
		"Integer.Swap: closed":        testkit.Named(intI, func() error { _, err := closedI.Swap(ctx, 1); return err }, closed),
		"Integer.Set: closed":         testkit.Named(intI, func() error { return closedI.Set(ctx, 1) }, closed),
		"Integer.Initialize: closed":  testkit.Named(intI, func() error { _, err := closedI.Initialize(ctx, 1); return err }, closed),
		"Bytes.Get: closed":           testkit.Named(bytesB, func() error { _, err := closedB.Get(ctx); return err }, closed),
		"Bytes.CompareAndSet: closed": testkit.Named(bytesB, func() error { _, err := closedB.CompareAndSet(ctx, nil, []byte("x")); return err }, closed),
		"Bytes.Swap: closed":          testkit.Named(bytesB, func() error { _, err := closedB.Swap(ctx, []byte("x")); return err }, closed),
		"Bytes.Set: closed":           testkit.Named(bytesB, func() error { return closedB.Set(ctx, []byte("x")) }, closed),
		"Bytes.Initialize: closed":    testkit.Named(bytesB, func() error { _, err := closedB.Initialize(ctx, []byte("x")); return err }, closed),

		"Long.Increment: client closed": testkit.Named(longCC, func() error { _, err := onClosedL.Increment(ctx); return err }, closed),
		"Long.Get: client closed":       testkit.Named(longCC, func() error { _, err := onClosedL.Get(ctx); return err }, closed),
		"Bytes.Set: client closed":      testkit.Named(bytCC, func() error { return onClosedB.Set(ctx, []byte("x")) }, closed),

		"Long.Get: nil context":           testkit.Named(longOK, func() error { _, err := l.Get(nilCtx); return err }, invalid),
		"Long.Add: nil context":           testkit.Named(longOK, func() error { _, err := l.Add(nilCtx, 1); return err }, invalid),
		"Long.Set: nil context":           testkit.Named(longOK, func() error { return l.Set(nilCtx, 1) }, invalid),
		"Integer.Swap: nil context":       testkit.Named(intOK, func() error { _, err := i.Swap(nilCtx, 1); return err }, invalid),
		"Bytes.CompareAndSet: nil ctx":    testkit.Named(bytOK, func() error { _, err := b.CompareAndSet(nilCtx, nil, nil); return err }, invalid),
		"Long.Increment: ctx cancelled":   testkit.Named(longOK, func() error { _, err := l.Increment(testkit.Cancelled()); return err }, context.Canceled),
		"Bytes.Initialize: ctx cancelled": testkit.Named(bytOK, func() error { _, err := b.Initialize(testkit.Cancelled(), nil); return err }, context.Canceled),

		"Long.Get: not a long":              testkit.Named(longBd, func() error { _, err := badL.Get(ctx); return err }, bad),
		"Long.Increment: not a long":        testkit.Named(longBd, func() error { _, err := badL.Increment(ctx); return err }, bad),
		"Long.Swap: not a long":             testkit.Named(longBd, func() error { _, err := badL.Swap(ctx, 1); return err }, bad),
		"Long.CompareAndSet: not a long":    testkit.Named(longBd, func() error { _, err := badL.CompareAndSet(ctx, 0, 1); return err }, bad),
		"Integer.Add: not an integer":       testkit.Named(intBd, func() error { _, err := badI.Add(ctx, 1); return err }, bad),
		"Integer.CompareAndSet: not an int": testkit.Named(intBd, func() error { _, err := badI.CompareAndSet(ctx, 0, 1); return err }, bad),
		"Integer.Get: not an integer":       testkit.Named(intBd, func() error { _, err := badI.Get(ctx); return err }, bad),
		"Integer.Decrement: not an integer": testkit.Named(intBd, func() error { _, err := badI.Decrement(ctx); return err }, bad),
		"Integer.Subtract: not an integer":  testkit.Named(intBd, func() error { _, err := badI.Subtract(ctx, 1); return err }, bad),
		"Long.Decrement: not a long":        testkit.Named(longBd, func() error { _, err := badL.Decrement(ctx); return err }, bad),
		"Long.Subtract: not a long":         testkit.Named(longBd, func() error { _, err := badL.Subtract(ctx, 1); return err }, bad),
		"Long.Add: not a long":              testkit.Named(longBd, func() error { _, err := badL.Add(ctx, 1); return err }, bad),
		"Integer.Increment: not an integer": testkit.Named(intBd, func() error { _, err := badI.Increment(ctx); return err }, bad),
		"Integer.Swap: not an integer":      testkit.Named(intBd, func() error { _, err := badI.Swap(ctx, 1); return err }, bad),
		"Long.Initialize: nil receiver":     testkit.Named(nilLng, func() error { _, err := nilL.Initialize(ctx, 1); return err }, invalid),
		"Long.Get: nil receiver":            testkit.Named(nilLng, func() error { _, err := nilL.Get(ctx); return err }, invalid),
		"Long.Increment: nil receiver":      testkit.Named(nilLng, func() error { _, err := nilL.Increment(ctx); return err }, invalid),
		"Long.Decrement: nil receiver":      testkit.Named(nilLng, func() error { _, err := nilL.Decrement(ctx); return err }, invalid),
		"Long.Add: nil receiver":            testkit.Named(nilLng, func() error { _, err := nilL.Add(ctx, 1); return err }, invalid),
		"Long.Subtract: nil receiver":       testkit.Named(nilLng, func() error { _, err := nilL.Subtract(ctx, 1); return err }, invalid),
		"Long.CompareAndSet: nil receiver":  testkit.Named(nilLng, func() error { _, err := nilL.CompareAndSet(ctx, 0, 1); return err }, invalid),
		"Long.Swap: nil receiver":           testkit.Named(nilLng, func() error { _, err := nilL.Swap(ctx, 1); return err }, invalid),
		"Long.Set: nil receiver":            testkit.Named(nilLng, func() error { return nilL.Set(ctx, 1) }, invalid),
		"Long.Close: nil receiver":          testkit.Named(nilLng, nilL.Close, invalid),
		"Long.Close: zero":                  testkit.Named(nilLng, zeroL.Close, invalid),
		"Long.Increment: zero":              testkit.Named(nilLng, func() error { _, err := zeroL.Increment(ctx); return err }, invalid),
		"Integer.Get: nil receiver":         testkit.Named(nilInt, func() error { _, err := nilI.Get(ctx); return err }, invalid),
		"Integer.Increment: nil receiver":   testkit.Named(nilInt, func() error { _, err := nilI.Increment(ctx); return err }, invalid),
		"Integer.Decrement: nil receiver":   testkit.Named(nilInt, func() error { _, err := nilI.Decrement(ctx); return err }, invalid),
		"Integer.Add: nil receiver":         testkit.Named(nilInt, func() error { _, err := nilI.Add(ctx, 1); return err }, invalid),
		"Integer.Subtract: nil receiver":    testkit.Named(nilInt, func() error { _, err := nilI.Subtract(ctx, 1); return err }, invalid),
		"Integer.CompareAndSet: nil recv":   testkit.Named(nilInt, func() error { _, err := nilI.CompareAndSet(ctx, 0, 1); return err }, invalid),
		"Integer.Swap: nil receiver":        testkit.Named(nilInt, func() error { _, err := nilI.Swap(ctx, 1); return err }, invalid),
		"Integer.Set: nil receiver":         testkit.Named(nilInt, func() error { return nilI.Set(ctx, 1) }, invalid),
		"Integer.Initialize: nil receiver":  testkit.Named(nilInt, func() error { _, err := nilI.Initialize(ctx, 1); return err }, invalid),
		"Integer.Close: nil receiver":       testkit.Named(nilInt, nilI.Close, invalid),
		"Integer.Close: zero":               testkit.Named(nilInt, zeroI.Close, invalid),
		"Bytes.Get: nil receiver":           testkit.Named(nilByt, func() error { _, err := nilB.Get(ctx); return err }, invalid),
		"Bytes.CompareAndSet: nil receiver": testkit.Named(nilByt, func() error { _, err := nilB.CompareAndSet(ctx, nil, nil); return err }, invalid),
		"Bytes.Swap: nil receiver":          testkit.Named(nilByt, func() error { _, err := nilB.Swap(ctx, nil); return err }, invalid),
		"Bytes.Set: nil receiver":           testkit.Named(nilByt, func() error { return nilB.Set(ctx, nil) }, invalid),
		"Bytes.Initialize: nil receiver":    testkit.Named(nilByt, func() error { _, err := nilB.Initialize(ctx, nil); return err }, invalid),
		"Bytes.Close: nil receiver":         testkit.Named(nilByt, nilB.Close, invalid),
		"Bytes.Close: zero":                 testkit.Named(nilByt, zeroB.Close, invalid),
		"Bytes.Get: zero":                   testkit.Named(nilByt, func() error { _, err := zeroB.Get(ctx); return err }, invalid),
	})

	require.NoError(t, closedL.Close(), "Close is idempotent")
	assert.Empty(t, nilL.Path()+nilI.Path()+nilB.Path()+zeroL.Path(), "the path of a nil or zero counter")
	for _, p := range []string{"/a", "/l", "/errs"} {
		_, ok := raw(t, c, p)
		assert.False(t, ok, "%s was made by a call that failed", p)
	}
	data, _ := raw(t, c, "/bad")
	assert.Equal(t, []byte{1, 2, 3}, data, "a counter wrote over data that is not its")
}
