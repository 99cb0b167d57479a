package testkit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

// Requests counts the ZooKeeper requests of the clients dialled with its
// Option, from their own metrics: what a test asserts about what was
// sent, without a proxy.
type Requests struct {
	meters *Meters
}

// NewRequests returns a counter for the clients of t.
func NewRequests(testing.TB) *Requests { return &Requests{meters: NewMeters()} }

// Option is the client option that makes a client's requests count here.
func (rq *Requests) Option() framework.Option { return framework.WithMeterProvider(rq.meters) }

// Count is how many requests of op ("children", "get", "multi", ...; ""
// for every op) the clients have sent so far, each attempt of a retried
// call counted.
func (rq *Requests) Count(t testing.TB, op string) uint64 {
	t.Helper()
	all, err := rq.meters.Collect(context.Background())
	require.NoError(t, err)
	var n uint64
	for _, s := range all {
		if s.Scope != metrics.ScopeName || s.Name != metrics.RequestDuration {
			continue
		}
		for _, p := range s.Points() {
			if v, ok := p.Attrs.Value(metrics.KeyOperation); op == "" || ok && v.AsString() == op {
				n += p.Count
			}
		}
	}
	return n
}
