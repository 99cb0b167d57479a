package cache_test

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
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// Every failure of the package's API matches the sentinel its
// documentation names and names the cache and its path; bad input fails
// before anything is sent, and the cache stays usable after it.
func TestEveryFailureMatchesItsSentinelAndNamesTheCache(t *testing.T) {
	cl := zktest.Standalone(t)
	rq := testkit.NewRequests(t)
	c := newClient(t, cl.Addrs(), rq.Option())
	sentBefore := rq.Count(t, "")

	unstarted, err := cache.New(c, "/errs/unstarted", cache.Children())
	require.NoError(t, err)
	closedClient := newClient(t, cl.Addrs())
	require.NoError(t, closedClient.Close())
	onClosedClient, err := cache.New(closedClient, "/errs/never", cache.Single())
	require.NoError(t, err)
	var nilCache *cache.Cache
	zero := &cache.Cache{}
	var nilCtx context.Context
	ctx10 := func() context.Context { return ctxT(t, 10*time.Second) }
	newErr := func(path string, shape cache.Shape, opts ...cache.Option) func() error {
		return func() error { _, err := cache.New(c, path, shape, opts...); return err }
	}
	const (
		x    = "cache /x: "
		unst = "cache /errs/unstarted: "
	)
	invalid, noPath, isClosed := zkrecipes.ErrInvalidArgument, zkrecipes.ErrInvalidPath, zkrecipes.ErrClosed

	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"New: nil client":     testkit.Named(x, func() error { _, err := cache.New(nil, "/x", cache.Single()); return err }, invalid),
		"New: bad path":       testkit.Named("cache x/: ", newErr("x/", cache.Single()), noPath),
		"New: the root":       testkit.Named("cache /: ", newErr("/", cache.Tree(1)), noPath),
		"New: zero shape":     testkit.Named(x, newErr("/x", cache.Shape{}), invalid),
		"New: negative depth": testkit.Named(x, newErr("/x", cache.Tree(-1)), invalid),
		"New: buffer 0":       testkit.Named(x, newErr("/x", cache.Single(), cache.WithBufferSize(0)), invalid),

		"Start: nil context":   testkit.Named(unst, func() error { return unstarted.Start(nilCtx) }, invalid),
		"Start: cancelled":     testkit.Named(unst, func() error { return unstarted.Start(testkit.Cancelled()) }, context.Canceled),
		"Start: client closed": testkit.Named("cache /errs/never: ", func() error { return onClosedClient.Start(ctx10()) }, isClosed),
		"Get: not started":     testkit.Named(unst, func() error { _, _, err := unstarted.Get("/errs/unstarted/a"); return err }, zkrecipes.ErrNotStarted),
		"Children: not started": testkit.Named(unst, func() error { _, err := unstarted.Children("/errs/unstarted"); return err },
			zkrecipes.ErrNotStarted),
		"Nodes: not started": testkit.Named(unst, func() error { _, err := unstarted.Nodes(); return err }, zkrecipes.ErrNotStarted),
		"Err: not started":   testkit.Named(unst, unstarted.Err, zkrecipes.ErrNotStarted),
		"Get: bad path":      testkit.Named(unst, func() error { _, _, err := unstarted.Get("nope"); return err }, noPath),
		"Children: bad path": testkit.Named(unst, func() error { _, err := unstarted.Children("/a//b"); return err }, noPath),

		"nil: Start":     testkit.Named("cache: ", func() error { return nilCache.Start(ctx10()) }, invalid),
		"nil: Get":       testkit.Named("cache: ", func() error { _, _, err := nilCache.Get("/x"); return err }, invalid),
		"nil: Close":     testkit.Named("cache: ", nilCache.Close, invalid),
		"zero: Nodes":    testkit.Named("cache: ", func() error { _, err := zero.Nodes(); return err }, invalid),
		"zero: Err":      testkit.Named("cache: ", zero.Err, invalid),
		"zero: Start":    testkit.Named("cache: ", func() error { return zero.Start(ctx10()) }, invalid),
		"zero: Children": testkit.Named("cache: ", func() error { _, err := zero.Children("/x"); return err }, invalid),
	})
	assert.Equal(t, sentBefore, rq.Count(t, ""), "bad input sent nothing")
	for _, s := range []*framework.Subscription[cache.Event]{nilCache.Subscribe(), zero.Subscribe()} {
		_, ok := <-s.Changes()
		assert.False(t, ok, "a nil or zero cache's subscription has ended")
	}

	// Still usable after all that.
	require.NoError(t, unstarted.Start(ctx10()))
	defer unstarted.Close()
	require.NoError(t, unstarted.Err())
	assert.Equal(t, "/errs/unstarted", unstarted.Path())
}

func TestUseAfterCloseIsErrClosed(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	create(t, c, "/closed/a", "")
	ch := newCache(t, c, "/closed", cache.Children())
	sub := ch.Subscribe()
	require.NoError(t, ch.Close())
	require.NoError(t, ch.Close(), "idempotent")
	for range sub.Changes() { // what was queued, then the end
	}
	const p = "cache /closed: "
	testkit.MatchSentinels(t, map[string]testkit.Failure{
		"Start":    testkit.Named(p, func() error { return ch.Start(ctxT(t, 10*time.Second)) }, zkrecipes.ErrClosed),
		"Get":      testkit.Named(p, func() error { _, _, err := ch.Get("/closed/a"); return err }, zkrecipes.ErrClosed),
		"Children": testkit.Named(p, func() error { _, err := ch.Children("/closed"); return err }, zkrecipes.ErrClosed),
		"Nodes":    testkit.Named(p, func() error { _, err := ch.Nodes(); return err }, zkrecipes.ErrClosed),
		"Err":      testkit.Named(p, ch.Err, zkrecipes.ErrClosed),
	})
	_, ok := <-ch.Subscribe().Changes()
	assert.False(t, ok, "a closed cache's subscription has ended")
}

func TestStartTwiceIsErrStarted(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	ch := newCache(t, c, "/twice", cache.Single())
	assert.ErrorIs(t, ch.Start(ctxT(t, 10*time.Second)), zkrecipes.ErrStarted)
	assert.NoError(t, ch.Err(), "still current")
}

// A path the client may not read fails Start with the server's refusal,
// and nothing keeps running.
func TestStartOnAnUnreadablePathFailsWithNoAuth(t *testing.T) {
	cl := zktest.Standalone(t)
	c := newClient(t, cl.Addrs())
	_, err := c.Create(ctxT(t, 10*time.Second), "/secret", nil,
		framework.WithACL(zk.DigestACL(zk.PermAll, "someone", "else")))
	require.NoError(t, err)
	ch, err := cache.New(c, "/secret", cache.Tree(1))
	require.NoError(t, err)
	defer ch.Close()
	err = ch.Start(ctxT(t, 30*time.Second))
	assert.ErrorIs(t, err, zk.ErrNoAuth)
	assert.ErrorContains(t, err, "cache /secret: ")
}
