package counter_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"github.com/zkrecipes/zkrecipes/internal/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/counter"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Bad input is refused with a typed error before anything is sent, and
// leaves nothing on the server.
func TestBadInputIsRefusedBeforeAnythingIsSent(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	long := func(path string, opts ...counter.Option) func() error {
		return func() error { _, err := counter.NewLong(c, path, opts...); return err }
	}
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"nil client long":    testkit.Fails(func() error { _, err := counter.NewLong(nil, "/a"); return err }, zkrecipes.ErrInvalidArgument),
		"nil client integer": testkit.Fails(func() error { _, err := counter.NewInteger(nil, "/a"); return err }, zkrecipes.ErrInvalidArgument),
		"nil client value":   testkit.Fails(func() error { _, err := counter.NewValue(nil, "/a"); return err }, zkrecipes.ErrInvalidArgument),
		"empty path":         testkit.Fails(long(""), zkrecipes.ErrInvalidPath),
		"relative path":      testkit.Fails(long("a/b"), zkrecipes.ErrInvalidPath),
		"trailing slash":     testkit.Fails(long("/a/"), zkrecipes.ErrInvalidPath),
		"root":               testkit.Fails(long("/"), zkrecipes.ErrInvalidPath),
		"bad lock path": testkit.Fails(long("/a", counter.WithPromotedToLock("/l//x", time.Second, retry.NTimes(1, 0))),
			zkrecipes.ErrInvalidArgument, zkrecipes.ErrInvalidPath),
		"zero lock timeout": testkit.Fails(long("/a", counter.WithPromotedToLock("/l", 0, retry.NTimes(1, 0))),
			zkrecipes.ErrInvalidArgument),
		"negative lock timeout": testkit.Fails(long("/a", counter.WithPromotedToLock("/l", -time.Second, retry.NTimes(1, 0))),
			zkrecipes.ErrInvalidArgument),
		"lock path is the value's": testkit.Fails(long("/a", counter.WithPromotedToLock("/a", time.Second, retry.NTimes(1, 0))),
			zkrecipes.ErrInvalidArgument),
		"empty participant id": testkit.Fails(long("/a", counter.WithParticipantID("")), zkrecipes.ErrInvalidArgument),
	})
	kids, _, err := c.Children(ctxT(t, 10*time.Second), "/")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"zookeeper"}, kids, "something was created")
}

func TestEveryOperationAfterCloseIsErrClosedAndCloseIsIdempotent(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l, err := counter.NewLong(c, "/counters/closed", counter.WithPromotedToLock("/counters/closed-lock", time.Second, retry.NTimes(1, 0)))
	require.NoError(t, err)
	v, err := counter.NewValue(c, "/values/closed")
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	require.NoError(t, v.Close())
	ctx := ctxT(t, 10*time.Second)
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"get":       testkit.Fails(func() error { _, err := l.Get(ctx); return err }, zkrecipes.ErrClosed),
		"increment": testkit.Fails(func() error { _, err := l.Increment(ctx); return err }, zkrecipes.ErrClosed),
		"cas":       testkit.Fails(func() error { _, err := l.CompareAndSet(ctx, 0, 1); return err }, zkrecipes.ErrClosed),
		"try-set":   testkit.Fails(func() error { _, err := l.TrySet(ctx, 1); return err }, zkrecipes.ErrClosed),
		"force-set": testkit.Fails(func() error { return l.ForceSet(ctx, 1) }, zkrecipes.ErrClosed),
		"init":      testkit.Fails(func() error { _, err := l.Initialize(ctx, 1); return err }, zkrecipes.ErrClosed),
		"value":     testkit.Fails(func() error { _, err := v.TrySet(ctx, []byte("x")); return err }, zkrecipes.ErrClosed),
	})
	_, ok := raw(t, c, "/counters")
	assert.False(t, ok, "something was created")
}

func TestOperationsOnAClosedClientAreErrClosed(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	l := newLong(t, c, "/counters/client-closed")
	require.NoError(t, c.Close())
	_, err := l.Increment(ctxT(t, 10*time.Second))
	assert.ErrorIs(t, err, zkrecipes.ErrClosed)
}
