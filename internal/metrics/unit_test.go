package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

// Without an SDK (the global provider before the application installs
// one, or an explicit no-op) every measurement on the hot path costs a
// call and no allocation: the attribute sets are built with the client.
func TestRecordingAllocatesNothingWithoutAnSDK(t *testing.T) {
	for name, mp := range map[string]metric.MeterProvider{
		"global": otel.GetMeterProvider(),
		"noop":   noop.NewMeterProvider(),
	} {
		t.Run(name, func(t *testing.T) {
			c, err := metrics.New(mp, metrics.Observed{
				Connected:      func() bool { return true },
				PendingDeletes: func() int { return 0 },
			})
			require.NoError(t, err)
			defer c.Close()
			r := metrics.For(mp).Recipe(metrics.Mutex, "/x", false)
			ctx := context.Background()
			start := time.Now()
			allocs := testing.AllocsPerRun(100, func() {
				c.Request(ctx, metrics.OpCreate, time.Millisecond, nil)
				c.Request(ctx, metrics.OpGet, time.Millisecond, zk.ErrNoNode)
				c.StateChange(conn.Event{State: conn.StateSuspended})
				r.Acquire(ctx, start, metrics.Acquired)
				r.Acquire(ctx, start, metrics.Timeout)
				r.HoldStarted()
				r.HoldEnded(true, metrics.SessionLost)
				r.Leading(true)
				r.Leading(false)
			})
			assert.Zero(t, allocs)
		})
	}
}

// A nil Client or Recipe records nothing and does not panic: a hold made
// outside a client's instruments stays a hold.
func TestNilInstrumentsRecordNothing(t *testing.T) {
	var c *metrics.Client
	var r *metrics.Recipe
	c.Request(context.Background(), metrics.OpSync, time.Millisecond, nil)
	c.StateChange(conn.Event{State: conn.StateLost})
	c.Close()
	r.Acquire(context.Background(), time.Now(), metrics.Acquired)
	r.HoldStarted()
	r.HoldEnded(true, metrics.Closed)
	r.Leading(true)
}

// The keys docs/production.md names are the ones the instruments use.
func TestAttributeKeysAreStable(t *testing.T) {
	for key, want := range map[attribute.Key]string{
		metrics.KeyState: "state", metrics.KeyOperation: "operation", metrics.KeyErrorType: "error.type",
		metrics.KeyKind: "kind", metrics.KeyOutcome: "outcome", metrics.KeyReason: "reason", metrics.KeyPath: "path",
	} {
		assert.Equal(t, want, string(key))
	}
}
