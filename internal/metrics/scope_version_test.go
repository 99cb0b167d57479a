package metrics_test

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

// The instruments' scope carries the module's version as the program was
// built with it (here, the test binary's main module: "(devel)"), so that
// an exporter's otel_scope_version says which zkrecipes recorded them.
// (Before: the version was empty.)
func TestScopeVersionIsTheModulesBuildVersion(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	require.Equal(t, metrics.ScopeName, bi.Main.Path, "the test binary's main module")
	require.NotEmpty(t, bi.Main.Version)

	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	c, err := metrics.New(mp, metrics.Observed{Connected: func() bool { return true }, PendingDeletes: func() int { return 0 }})
	require.NoError(t, err)
	defer c.Close()
	metrics.For(mp).Recipe(metrics.Mutex, "/x", false).Acquire(context.Background(), time.Now(), metrics.Acquired)

	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	require.NotEmpty(t, rm.ScopeMetrics)
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, metrics.ScopeName, sm.Scope.Name)
		assert.Equal(t, bi.Main.Version, sm.Scope.Version, "scope version")
	}
}
