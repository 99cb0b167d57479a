package testkit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

// Requests counts the ZooKeeper requests of the clients dialled with its
// Option, from their own metrics: what a test asserts about what was
// sent, without a proxy.
type Requests struct {
	reader   *sdkmetric.ManualReader
	provider *sdkmetric.MeterProvider
}

// NewRequests returns a counter that ends with t.
func NewRequests(t testing.TB) *Requests {
	r := sdkmetric.NewManualReader()
	rq := &Requests{reader: r, provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))}
	t.Cleanup(func() { _ = rq.provider.Shutdown(context.Background()) })
	return rq
}

// Option is the client option that makes a client's requests count here.
func (rq *Requests) Option() framework.Option { return framework.WithMeterProvider(rq.provider) }

// Count is how many requests of op ("children", "get", "multi", ...; ""
// for every op) the clients have sent so far, each attempt of a retried
// call counted.
func (rq *Requests) Count(t testing.TB, op string) uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, rq.reader.Collect(context.Background(), &rm))
	var n uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if m.Name != metrics.RequestDuration || !ok {
				continue
			}
			for _, dp := range h.DataPoints {
				if v, ok := dp.Attributes.Value(metrics.KeyOperation); op == "" || ok && v.AsString() == op {
					n += dp.Count
				}
			}
		}
	}
	return n
}
