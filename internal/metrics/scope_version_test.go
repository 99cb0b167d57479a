package metrics_test

import (
	"context"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

// scopes is a MeterProvider that remembers the version each scope's meter
// was asked for: what an SDK would export as otel_scope_version. Made of
// the API alone, so that the library's module needs no SDK for its tests.
type scopes struct {
	noop.MeterProvider
	mu       sync.Mutex
	versions map[string][]string
}

func (s *scopes) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	s.mu.Lock()
	s.versions[name] = append(s.versions[name], metric.NewMeterConfig(opts...).InstrumentationVersion())
	s.mu.Unlock()
	return s.MeterProvider.Meter(name, opts...)
}

// The instruments' scope carries the module's version as the program was
// built with it (here, the test binary's main module: "(devel)"), so that
// an exporter's otel_scope_version says which zkrecipes recorded them.
// (Before: the version was empty.)
func TestScopeVersionIsTheModulesBuildVersion(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	require.Equal(t, metrics.ScopeName, bi.Main.Path, "the test binary's main module")
	require.NotEmpty(t, bi.Main.Version)

	mp := &scopes{versions: map[string][]string{}}
	c, err := metrics.New(mp, metrics.Observed{Connected: func() bool { return true }, PendingDeletes: func() int { return 0 }})
	require.NoError(t, err)
	defer c.Close()
	metrics.For(mp).Recipe(metrics.Mutex, "/x", false).Acquire(context.Background(), time.Now(), metrics.Acquired)

	mp.mu.Lock()
	defer mp.mu.Unlock()
	require.NotEmpty(t, mp.versions)
	for name, vs := range mp.versions {
		assert.Equal(t, metrics.ScopeName, name)
		for _, v := range vs {
			assert.Equal(t, bi.Main.Version, v, "scope version")
		}
	}
}
