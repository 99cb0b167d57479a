package metrics_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/integration/testkit"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// meters is an in-memory OpenTelemetry pipeline on the API alone
// (testkit.Meters): a MeterProvider for framework.WithMeterProvider that
// collects what the library records. It remembers which instruments have
// moved (recorded anything other than zero) in any collection so far, and
// checks each instrument's unit against the documented one at every
// collection.
type meters struct {
	provider *testkit.Meters

	mu    sync.Mutex
	moved map[string]bool
	units map[string]string // as collected
}

func newMeters(*testing.T) *meters {
	return &meters{provider: testkit.NewMeters(), moved: map[string]bool{}, units: map[string]string{}}
}

// client dials addrs with the provider, and closes the client when t ends.
func (m *meters) client(t *testing.T, addrs []string, opts ...framework.Option) *framework.Client {
	t.Helper()
	return testkit.Client(t, addrs, append([]framework.Option{framework.WithMeterProvider(m.provider)}, opts...)...)
}

// point is what one instrument recorded for the data points that match a
// filter: the sum of a counter's or up-down counter's values, a histogram's
// count and sum.
type point struct {
	value int64
	count uint64
	sum   float64
	found bool
}

// collect reads every instrument of the zkrecipes scope.
func (m *meters) collect() ([]testkit.Series, error) {
	all, err := m.provider.Collect(context.Background())
	if err != nil {
		return nil, err
	}
	var out []testkit.Series
	for _, s := range all {
		if s.Scope == metrics.ScopeName {
			out = append(out, s)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mt := range out {
		m.units[mt.Name] = mt.Unit
		if p := read(mt, nil); p.value != 0 || p.count != 0 {
			m.moved[mt.Name] = true
		}
	}
	return out, nil
}

// get is what name recorded in the data points whose attributes include
// every one of attrs.
func (m *meters) get(name string, attrs ...attribute.KeyValue) (point, error) {
	all, err := m.collect()
	if err != nil {
		return point{}, err
	}
	for _, mt := range all {
		if mt.Name == name {
			return read(mt, attrs), nil
		}
	}
	return point{}, nil
}

func read(mt testkit.Series, attrs []attribute.KeyValue) point {
	var p point
	match := func(set attribute.Set) bool {
		for _, kv := range attrs {
			if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
				return false
			}
		}
		return true
	}
	for _, dp := range mt.Points() {
		if match(dp.Attrs) {
			p.value += dp.Value
			p.count += dp.Count
			p.sum += dp.Sum
			p.found = true
		}
	}
	return p
}

// attrsOf returns the attribute sets name was recorded with.
func (m *meters) attrsOf(t *testing.T, name string) []attribute.Set {
	t.Helper()
	all, err := m.collect()
	require.NoError(t, err)
	var sets []attribute.Set
	for _, mt := range all {
		if mt.Name != name {
			continue
		}
		for _, dp := range mt.Points() {
			sets = append(sets, dp.Attrs)
		}
	}
	return sets
}

// value is the current value of a counter or up-down counter.
func (m *meters) value(t *testing.T, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	p, err := m.get(name, attrs...)
	require.NoError(t, err)
	return p.value
}

// count is a histogram's count.
func (m *meters) count(t *testing.T, name string, attrs ...attribute.KeyValue) uint64 {
	t.Helper()
	p, err := m.get(name, attrs...)
	require.NoError(t, err)
	return p.count
}

// sum is a histogram's sum.
func (m *meters) sum(t *testing.T, name string, attrs ...attribute.KeyValue) float64 {
	t.Helper()
	p, err := m.get(name, attrs...)
	require.NoError(t, err)
	return p.sum
}

// waitValue waits until a counter or up-down counter reads want.
func (m *meters) waitValue(t *testing.T, want int64, name string, attrs ...attribute.KeyValue) {
	t.Helper()
	m.waitFor(t, fmt.Sprintf("%s%v == %d", name, attrs, want), func(p point) bool { return p.value == want }, name, attrs...)
}

// waitAtLeast waits until a counter reads want or more.
func (m *meters) waitAtLeast(t *testing.T, want int64, name string, attrs ...attribute.KeyValue) {
	t.Helper()
	m.waitFor(t, fmt.Sprintf("%s%v >= %d", name, attrs, want), func(p point) bool { return p.value >= want }, name, attrs...)
}

func (m *meters) waitFor(t *testing.T, what string, ok func(point) bool, name string, attrs ...attribute.KeyValue) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		p, err := m.get(name, attrs...)
		if assert.NoError(ct, err) {
			assert.True(ct, ok(p), "%s; got value %d, count %d", what, p.value, p.count)
		}
	}, 30*time.Second, 10*time.Millisecond)
}

// movedNames returns the instruments that have moved so far, sorted.
func (m *meters) movedNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := range m.moved {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (m *meters) unitOf(name string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.units[name]
	return u, ok
}

// Attribute shorthands.
func kind(k string) attribute.KeyValue    { return metrics.KeyKind.String(k) }
func outcome(o string) attribute.KeyValue { return metrics.KeyOutcome.String(o) }
func reason(r string) attribute.KeyValue  { return metrics.KeyReason.String(r) }
func state(s string) attribute.KeyValue   { return metrics.KeyState.String(s) }
func op(o string) attribute.KeyValue      { return metrics.KeyOperation.String(o) }
