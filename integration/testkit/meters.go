package testkit

import (
	"context"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
	"go.opentelemetry.io/otel/metric/noop"
)

// Meters is an in-memory MeterProvider built on the OpenTelemetry API
// alone: the library's module does not require the SDK (a user
// who takes a lock gets the API modules and nothing of our test rig), so
// its tests read what the library records here. It keeps what each
// instrument was made with and what was recorded on it, per attribute set,
// summed as an SDK's cumulative reader reports it. As in an SDK, an
// instrument made again under the same scope and name (by another client
// of the process) is the same instrument. Collect runs the callbacks of
// the observable instruments and keeps the sum of this collection's
// readings.
//
// It serves the instruments the library uses (Int64Counter,
// Int64UpDownCounter, Float64Histogram, Int64ObservableUpDownCounter); any
// other kind is a no-op, so an instrument of a new kind never reports
// having moved, and the tests that check every documented instrument fail
// until it is served here.
type Meters struct {
	noop.MeterProvider

	mu          sync.Mutex
	series      []*Series
	observables map[metric.Int64Observable]*Series
	callbacks   []*callback
}

// Series is what one instrument has recorded: its scope (the meter's
// name), name and unit, and a Point per attribute set.
type Series struct {
	Scope, Name, Unit string
	observable        bool
	points            map[attribute.Distinct]*Point
	order             []attribute.Distinct
}

// Point is what an instrument recorded for one attribute set: a counter's
// or up-down counter's sum (an observable one's readings in the last
// collection, summed) in Value, a
// histogram's count of recordings and their sum in Count and Sum.
type Point struct {
	Attrs attribute.Set
	Value int64
	Count uint64
	Sum   float64
}

type callback struct {
	f    metric.Callback
	gone bool
}

// NewMeters returns an empty provider.
func NewMeters() *Meters {
	return &Meters{observables: map[metric.Int64Observable]*Series{}}
}

// Meter returns a meter whose instruments record into m, under the scope
// name.
func (m *Meters) Meter(name string, _ ...metric.MeterOption) metric.Meter {
	return &meter{m: m, scope: name}
}

// Collect runs the registered callbacks and returns a copy of every
// instrument made so far, in the order they were first made.
func (m *Meters) Collect(ctx context.Context) ([]Series, error) {
	m.mu.Lock()
	cbs := slices.Clone(m.callbacks)
	for _, s := range m.series {
		if s.observable {
			for _, p := range s.points {
				p.Value = 0
			}
		}
	}
	m.mu.Unlock()
	// Callbacks run unlocked: they observe through m, which locks.
	for _, cb := range cbs {
		m.mu.Lock()
		gone := cb.gone
		m.mu.Unlock()
		if gone {
			continue
		}
		if err := cb.f(ctx, &observer{m: m}); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Series, 0, len(m.series))
	for _, s := range m.series {
		c := *s
		c.points = make(map[attribute.Distinct]*Point, len(s.points))
		for k, p := range s.points {
			cp := *p
			c.points[k] = &cp
		}
		c.order = slices.Clone(s.order)
		out = append(out, c)
	}
	return out, nil
}

// Points returns the series' points in the order their attribute sets
// were first recorded.
func (s Series) Points() []Point {
	out := make([]Point, 0, len(s.order))
	for _, k := range s.order {
		out = append(out, *s.points[k])
	}
	return out
}

// newSeries returns the series of the instrument scope/name, made on
// first use with unit.
func (m *Meters) newSeries(scope, name, unit string, observable bool) *Series {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.series {
		if s.Scope == scope && s.Name == name {
			return s
		}
	}
	s := &Series{Scope: scope, Name: name, Unit: unit, observable: observable,
		points: map[attribute.Distinct]*Point{}}
	m.series = append(m.series, s)
	return s
}

// record applies f to the point of s for attrs, made on first use.
func (m *Meters) record(s *Series, attrs attribute.Set, f func(*Point)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := attrs.Equivalent()
	p, ok := s.points[k]
	if !ok {
		p = &Point{Attrs: attrs}
		s.points[k] = p
		s.order = append(s.order, k)
	}
	f(p)
}

type meter struct {
	noop.Meter
	m     *Meters
	scope string
}

func (mt *meter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	cfg := metric.NewInt64CounterConfig(opts...)
	return &int64Counter{s: mt.m.newSeries(mt.scope, name, cfg.Unit(), false), m: mt.m}, nil
}

func (mt *meter) Int64UpDownCounter(name string, opts ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	cfg := metric.NewInt64UpDownCounterConfig(opts...)
	return &int64UpDownCounter{s: mt.m.newSeries(mt.scope, name, cfg.Unit(), false), m: mt.m}, nil
}

func (mt *meter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	cfg := metric.NewFloat64HistogramConfig(opts...)
	return &float64Histogram{s: mt.m.newSeries(mt.scope, name, cfg.Unit(), false), m: mt.m}, nil
}

func (mt *meter) Int64ObservableUpDownCounter(name string, opts ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	cfg := metric.NewInt64ObservableUpDownCounterConfig(opts...)
	s := mt.m.newSeries(mt.scope, name, cfg.Unit(), true)
	o := &int64ObservableUpDownCounter{s: s}
	mt.m.mu.Lock()
	mt.m.observables[o] = s
	mt.m.mu.Unlock()
	for _, f := range cfg.Callbacks() {
		mt.m.register(func(ctx context.Context, _ metric.Observer) error {
			return f(ctx, &int64Observer{m: mt.m, s: s})
		})
	}
	return o, nil
}

func (mt *meter) RegisterCallback(f metric.Callback, _ ...metric.Observable) (metric.Registration, error) {
	return mt.m.register(f), nil
}

func (m *Meters) register(f metric.Callback) metric.Registration {
	cb := &callback{f: f}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.callbacks = append(m.callbacks, cb)
	return &registration{m: m, cb: cb}
}

type registration struct {
	embedded.Registration
	m  *Meters
	cb *callback
}

func (r *registration) Unregister() error {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.cb.gone = true
	return nil
}

// observer takes the readings of one collection. The instruments it is
// given are matched by identity against the ones this provider made;
// another provider's are ignored, as an SDK does.
type observer struct {
	embedded.Observer
	m *Meters
}

func (o *observer) ObserveFloat64(metric.Float64Observable, float64, ...metric.ObserveOption) {}

func (o *observer) ObserveInt64(inst metric.Int64Observable, v int64, opts ...metric.ObserveOption) {
	o.m.mu.Lock()
	s, ok := o.m.observables[inst]
	o.m.mu.Unlock()
	if !ok {
		return
	}
	o.m.record(s, metric.NewObserveConfig(opts).Attributes(), func(p *Point) { p.Value += v })
}

type int64Observer struct {
	embedded.Int64Observer
	m *Meters
	s *Series
}

func (o *int64Observer) Observe(v int64, opts ...metric.ObserveOption) {
	o.m.record(o.s, metric.NewObserveConfig(opts).Attributes(), func(p *Point) { p.Value += v })
}

type int64Counter struct {
	noop.Int64Counter
	m *Meters
	s *Series
}

func (c *int64Counter) Enabled(context.Context) bool { return true }

func (c *int64Counter) Add(_ context.Context, v int64, opts ...metric.AddOption) {
	c.m.record(c.s, metric.NewAddConfig(opts).Attributes(), func(p *Point) { p.Value += v })
}

type int64UpDownCounter struct {
	noop.Int64UpDownCounter
	m *Meters
	s *Series
}

func (c *int64UpDownCounter) Enabled(context.Context) bool { return true }

func (c *int64UpDownCounter) Add(_ context.Context, v int64, opts ...metric.AddOption) {
	c.m.record(c.s, metric.NewAddConfig(opts).Attributes(), func(p *Point) { p.Value += v })
}

type float64Histogram struct {
	noop.Float64Histogram
	m *Meters
	s *Series
}

func (h *float64Histogram) Enabled(context.Context) bool { return true }

func (h *float64Histogram) Record(_ context.Context, v float64, opts ...metric.RecordOption) {
	h.m.record(h.s, metric.NewRecordConfig(opts).Attributes(), func(p *Point) {
		p.Count++
		p.Sum += v
	})
}

// int64ObservableUpDownCounter is used by pointer, so that each one is a
// distinct key of Meters.observables.
type int64ObservableUpDownCounter struct {
	noop.Int64ObservableUpDownCounter
	s *Series
}
