package cache_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// A cache's Close, while its engine reads a changed node on a link that
// has just stopped answering, returns within the release timeout, as
// every recipe's Close promises (integration/closebound_test.go): the
// engine's read runs under the cache's life, which Close cancels.
func TestCacheCloseDuringARereadIsBounded(t *testing.T) {
	cl := zktest.Standalone(t)
	p := cl.NewProxy()
	c := testkit.Client(t, p.Addrs(), framework.WithSessionTimeout(12*time.Second), framework.WithReleaseTimeout(time.Second))
	writer := testkit.Client(t, cl.Addrs())
	create(t, writer, "/c/a", "0")
	ch, err := cache.New(c, "/c", cache.Tree(cache.AnyDepth))
	require.NoError(t, err)
	require.NoError(t, ch.Start(ctxT(t, 30*time.Second)))
	require.Eventually(t, func() bool { _, ok, _ := ch.Get("/c/a"); return ok }, 10*time.Second, time.Millisecond)

	p.StallRequestsFrom(zktest.OpGetData) // the engine's read of the change is held, and the link with it
	set(t, writer, "/c/a", "1")
	require.Eventually(t, p.Stalled, 10*time.Second, time.Millisecond)

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- ch.Close() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return in 30s")
	}
	took := time.Since(start)
	assert.Less(t, took, 2*time.Second, "cache Close took %v: it waited for the engine's read (receive timeout 8s)", took)
	p.Heal()
}
