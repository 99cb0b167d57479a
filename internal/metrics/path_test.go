package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A lock per entity would make a time series per entity: the recipes'
// instruments carry the path only when the client is told to, and the
// requests' never do (their paths are nodes, one per hold).
func TestPathIsAnAttributeOnlyWithTheOption(t *testing.T) {
	cl := zktest.Standalone(t)
	for _, on := range []bool{false, true} {
		m := newMeters(t)
		var opts []framework.Option
		if on {
			opts = append(opts, framework.WithMetricPathAttribute())
		}
		c := m.client(t, cl.Addrs(), opts...)
		ctx := testkit.Ctx(t, 30*time.Second)
		mu, err := mutex.New(c, "/with-path")
		require.NoError(t, err)
		h, err := mu.Acquire(ctx)
		require.NoError(t, err)
		latch, err := leader.NewLatch(c, "/with-path-latch")
		require.NoError(t, err)
		require.NoError(t, latch.Start(context.Background()))
		_, err = latch.Await(ctx)
		require.NoError(t, err)

		for name, path := range map[string]string{
			metrics.AcquireDuration: "", // both
			metrics.HoldActive:      "",
			metrics.LeaderLeading:   "/with-path-latch",
		} {
			sets := m.attrsOf(t, name)
			require.NotEmpty(t, sets, name)
			for _, set := range sets {
				got, ok := set.Value(metrics.KeyPath)
				if !on {
					assert.False(t, ok, "%s has a path without the option: %v", name, set)
					continue
				}
				if assert.True(t, ok, "%s has no path with the option: %v", name, set) && path != "" {
					assert.Equal(t, path, got.AsString(), name)
				}
				if ok && path == "" {
					assert.Contains(t, []string{"/with-path", "/with-path-latch"}, got.AsString(), name)
				}
			}
		}
		for _, set := range m.attrsOf(t, metrics.RequestDuration) {
			_, ok := set.Value(metrics.KeyPath)
			assert.False(t, ok, "a request has a path: %v", set)
		}
		require.NoError(t, h.Release())
		require.NoError(t, latch.Close())
		require.NoError(t, mu.Close())
	}
}
