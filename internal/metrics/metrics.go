// Package metrics holds the OpenTelemetry instruments of the module: a
// framework.Client's own (Client: its session and its requests), made
// once, when the client is, and the recipes' (Recipes: acquires, holds,
// leaders), made once per MeterProvider, so that the recipes and the
// framework only call methods here. The instruments, their names,
// units and attributes are the table in docs/production.md ("Metrics");
// Instruments lists them for the test that checks the two agree.
//
// Nothing here picks an exporter: the instruments come from the
// MeterProvider the client was given (the global one by default, a no-op
// until the application installs its own). Every method on the hot path
// records with attribute sets built in advance, so that with a no-op
// provider a measurement costs a call and no allocation.
package metrics

import (
	"context"
	"errors"
	"reflect"
	"runtime/debug"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/zkrecipes/zkrecipes/conn"
)

// ScopeName is the instrumentation scope (the meter's name): the module.
const ScopeName = "github.com/zkrecipes/zkrecipes"

// scopeVersion is the scope's version: the module's, as the program was
// built with it, read once from its build information (no version
// constant to forget to bump).
var scopeVersion = moduleVersion()

// moduleVersion is the version of the module ScopeName in the running
// program: the main module's if it is the program (a checkout's "(devel)",
// or what go install fetched), else the dependency's, or "" if the build
// recorded none.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if bi.Main.Path == ScopeName {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path != ScopeName {
			continue
		}
		if d.Replace != nil && d.Replace.Version != "" {
			return d.Replace.Version
		}
		return d.Version
	}
	return ""
}

// The instruments' names.
const (
	SessionStateChanges = "zkrecipes.session.state_changes"
	SessionEstablished  = "zkrecipes.session.established"
	SessionConnected    = "zkrecipes.session.connected"
	RequestDuration     = "zkrecipes.request.duration"
	AcquireDuration     = "zkrecipes.acquire.duration"
	HoldActive          = "zkrecipes.hold.active"
	HoldLosses          = "zkrecipes.hold.losses"
	LeaderLeading       = "zkrecipes.leader.leading"
	DeletePending       = "zkrecipes.delete.pending"
)

// The attribute keys.
const (
	KeyState     = attribute.Key("state")
	KeyOperation = attribute.Key("operation")
	KeyErrorType = attribute.Key("error.type")
	KeyKind      = attribute.Key("kind")
	KeyOutcome   = attribute.Key("outcome")
	KeyReason    = attribute.Key("reason")
	KeyPath      = attribute.Key("path")
)

// Instrument describes one instrument, as the table of docs/production.md does.
type Instrument struct {
	Name string
	Unit string
	// Kind is the OpenTelemetry instrument kind: "counter",
	// "updowncounter", "histogram", "observable_updowncounter".
	Kind string
	// Attributes are the keys it is recorded with (path only with the
	// path option).
	Attributes []attribute.Key
}

// Instruments lists every instrument of a client.
var Instruments = []Instrument{
	{SessionStateChanges, "{change}", "counter", []attribute.Key{KeyState}},
	{SessionEstablished, "{session}", "counter", nil},
	{SessionConnected, "{session}", "observable_updowncounter", nil},
	{RequestDuration, "s", "histogram", []attribute.Key{KeyOperation, KeyErrorType}},
	{AcquireDuration, "s", "histogram", []attribute.Key{KeyKind, KeyOutcome, KeyPath}},
	{HoldActive, "{hold}", "updowncounter", []attribute.Key{KeyKind, KeyPath}},
	{HoldLosses, "{hold}", "counter", []attribute.Key{KeyKind, KeyReason, KeyPath}},
	{LeaderLeading, "{leader}", "updowncounter", []attribute.Key{KeyKind, KeyPath}},
	{DeletePending, "{delete}", "observable_updowncounter", nil},
}

// Kind is a recipe, as the kind attribute names it: one of the module's
// below, or a user's recipe's own name.
type Kind string

// The module's recipes.
const (
	Mutex          Kind = "mutex"
	RWLockRead     Kind = "rwlock_read"
	RWLockWrite    Kind = "rwlock_write"
	Semaphore      Kind = "semaphore"
	SemaphoreMutex Kind = "semaphore_mutex"
	Latch          Kind = "latch"
	Selector       Kind = "selector"
)

// Outcome is how an acquire ended.
type Outcome int

// The outcomes of an acquire.
const (
	Acquired   Outcome = iota
	WouldBlock         // a TryAcquire found it taken
	Timeout            // the caller's deadline passed
	Cancelled          // the caller's context was cancelled, or the recipe or client closed
	Failed             // any other error
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"acquired", "would_block", "timeout", "cancelled", "error"}

// String is the outcome attribute's value.
func (o Outcome) String() string { return outcomeNames[o] }

// Reason is why a hold was lost.
type Reason int

// The reasons a hold is lost.
const (
	Suspended    Reason = iota // the link was in doubt (standard error policy)
	SessionLost                // the session is gone
	NodeDeleted                // its node was deleted or re-created by someone else
	Closed                     // its client was closed under it
	LeaseExpired               // its lease time ran out (WithLeaseTime)
	numReasons
)

var reasonNames = [numReasons]string{"suspended", "session_lost", "node_deleted", "closed", "lease_expired"}

// String is the reason attribute's value.
func (r Reason) String() string { return reasonNames[r] }

// Op is a ZooKeeper request, as the operation attribute names it.
type Op int

// The operations. A watch variant counts as its operation.
const (
	OpCreate Op = iota
	OpDelete
	OpGet
	OpSet
	OpExists
	OpChildren
	OpSync
	OpMulti
	numOps
)

var opNames = [numOps]string{"create", "delete", "get", "set", "exists", "children", "sync", "multi"}

// String is the operation attribute's value.
func (o Op) String() string { return opNames[o] }

// OpNamed is the Op of the framework's name for a call ("getw" is OpGet),
// and false for a name it does not know.
func OpNamed(name string) (Op, bool) {
	switch name {
	case "create":
		return OpCreate, true
	case "delete":
		return OpDelete, true
	case "get", "getw":
		return OpGet, true
	case "set":
		return OpSet, true
	case "exists", "existsw":
		return OpExists, true
	case "children", "childrenw":
		return OpChildren, true
	case "sync":
		return OpSync, true
	case "multi":
		return OpMulti, true
	}
	return 0, false
}

// errType is a request's error.type: a few stable values, "" for success.
type errType int

const (
	errNone errType = iota
	errNoNode
	errNodeExists
	errBadVersion
	errNotEmpty
	errNoAuth
	errConnection
	errSessionExpired
	errTimeout
	errCancelled
	errClosed
	errOther
	numErrTypes
)

var errTypeNames = [numErrTypes]string{"", "no_node", "node_exists", "bad_version", "not_empty", "no_auth",
	"connection_loss", "session_expired", "timeout", "cancelled", "closed", "other"}

func errTypeOf(err error) errType {
	switch {
	case err == nil:
		return errNone
	case errors.Is(err, zk.ErrNoNode):
		return errNoNode
	case errors.Is(err, zk.ErrNodeExists):
		return errNodeExists
	case errors.Is(err, zk.ErrBadVersion):
		return errBadVersion
	case errors.Is(err, zk.ErrNotEmpty):
		return errNotEmpty
	case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrAuthFailed):
		return errNoAuth
	case errors.Is(err, zk.ErrSessionExpired):
		return errSessionExpired
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrSessionMoved):
		return errConnection
	case errors.Is(err, context.DeadlineExceeded):
		return errTimeout
	case errors.Is(err, context.Canceled):
		return errCancelled
	case errors.Is(err, zk.ErrClosing):
		return errClosed
	}
	return errOther
}

// stateNames are the state attribute's values, by conn.State.
var stateNames = map[conn.State]string{
	conn.StateConnected:   "connected",
	conn.StateSuspended:   "suspended",
	conn.StateReconnected: "reconnected",
	conn.StateLost:        "lost",
	conn.StateReadOnly:    "read_only",
}

// The histograms' buckets, in seconds. The API's default buckets are
// meant for milliseconds.
var (
	requestBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	acquireBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
)

// Observed is what the observable instruments read from their client at
// each collection.
type Observed struct {
	// Connected reports whether the client's session is connected now.
	Connected func() bool
	// PendingDeletes is the length of the background deleter's queue.
	PendingDeletes func() int
}

// Client is the instruments of one framework.Client. Its methods are safe
// for concurrent use, and a nil *Client records nothing.
type Client struct {
	stateChanges metric.Int64Counter
	established  metric.Int64Counter
	request      metric.Float64Histogram
	registration metric.Registration

	stateOpts map[conn.State][]metric.AddOption
	reqOpts   [numOps][numErrTypes][]metric.RecordOption
}

// instruments makes instruments with m, each a no-op where it cannot be
// made, and collects why not.
type instruments struct {
	m    metric.Meter
	errs []error
}

func (in *instruments) check(err error) {
	if err != nil {
		in.errs = append(in.errs, err)
	}
}

func (in *instruments) counter(name, unit, desc string) metric.Int64Counter {
	c, err := in.m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil {
		in.check(err)
		c, _ = noop.Meter{}.Int64Counter("")
	}
	return c
}

func (in *instruments) upDown(name, unit, desc string) metric.Int64UpDownCounter {
	c, err := in.m.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil {
		in.check(err)
		c, _ = noop.Meter{}.Int64UpDownCounter("")
	}
	return c
}

func (in *instruments) histogram(name, desc string, buckets []float64) metric.Float64Histogram {
	h, err := in.m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(buckets...))
	if err != nil {
		in.check(err)
		h, _ = noop.Meter{}.Float64Histogram("")
	}
	return h
}

// New makes a client's instruments from mp. The error says which
// instruments could not be made; those are no-ops, and the rest work.
func New(mp metric.MeterProvider, obs Observed) (*Client, error) {
	in := &instruments{m: mp.Meter(ScopeName, metric.WithInstrumentationVersion(scopeVersion))}
	c := &Client{
		stateChanges: in.counter(SessionStateChanges, "{change}",
			"Connection state changes of the client's ZooKeeper session, by the state entered."),
		established: in.counter(SessionEstablished, "{session}",
			"ZooKeeper sessions established (a new session id): the first, and each after a loss."),
		request: in.histogram(RequestDuration,
			"Duration of ZooKeeper requests, by operation; each attempt of a retried call counts.", requestBuckets),
	}
	connected, err := in.m.Int64ObservableUpDownCounter(SessionConnected, metric.WithUnit("{session}"),
		metric.WithDescription("1 while the client's session is connected, else 0."))
	in.check(err)
	pending, err := in.m.Int64ObservableUpDownCounter(DeletePending, metric.WithUnit("{delete}"),
		metric.WithDescription("Guaranteed deletes the client is still retrying in the background."))
	in.check(err)
	if connected != nil && pending != nil && obs.Connected != nil && obs.PendingDeletes != nil {
		reg, err := in.m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			up := int64(0)
			if obs.Connected() {
				up = 1
			}
			o.ObserveInt64(connected, up)
			o.ObserveInt64(pending, int64(obs.PendingDeletes()))
			return nil
		}, connected, pending)
		in.check(err)
		c.registration = reg
	}

	c.stateOpts = make(map[conn.State][]metric.AddOption, len(stateNames))
	for st, name := range stateNames {
		c.stateOpts[st] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(KeyState.String(name)))}
	}
	for op := range numOps {
		for et := range numErrTypes {
			attrs := []attribute.KeyValue{KeyOperation.String(opNames[op])}
			if et != errNone {
				attrs = append(attrs, KeyErrorType.String(errTypeNames[et]))
			}
			c.reqOpts[op][et] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}
		}
	}
	return c, errors.Join(in.errs...)
}

// Close unregisters the observable instruments' callback: the client is
// no longer observed.
func (c *Client) Close() {
	if c != nil && c.registration != nil {
		_ = c.registration.Unregister()
	}
}

// StateChange counts one state change of the client's connection.
func (c *Client) StateChange(ev conn.Event) {
	if c == nil {
		return
	}
	if opts, ok := c.stateOpts[ev.State]; ok {
		c.stateChanges.Add(context.Background(), 1, opts...)
	}
	if ev.NewSession {
		c.established.Add(context.Background(), 1)
	}
}

// Request records one ZooKeeper request (one attempt) of op that took d
// and ended with err.
func (c *Client) Request(ctx context.Context, op Op, d time.Duration, err error) {
	if c == nil {
		return
	}
	c.request.Record(ctx, d.Seconds(), c.reqOpts[op][errTypeOf(err)]...)
}

// Recipes is the recipes' instruments made with one MeterProvider. Its
// methods are safe for concurrent use.
type Recipes struct {
	acquire metric.Float64Histogram
	holds   metric.Int64UpDownCounter
	losses  metric.Int64Counter
	leading metric.Int64UpDownCounter
	kinds   sync.Map // Kind → *Recipe without a path attribute
}

// recipes caches each MeterProvider's Recipes: a recipe is made per lock
// path (a lock per entity makes many), and instruments once per provider.
var recipes sync.Map // metric.MeterProvider → *Recipes

// For returns the recipes' instruments made with mp, made at its first
// use. Instruments that cannot be made are no-ops (the error of their
// making is dropped: the client's own, made at Dial, logs the same).
func For(mp metric.MeterProvider) *Recipes {
	// A provider of a type that cannot be a map key is not cached.
	cacheable := reflect.TypeOf(mp).Comparable()
	if cacheable {
		if r, ok := recipes.Load(mp); ok {
			return r.(*Recipes)
		}
	}
	in := &instruments{m: mp.Meter(ScopeName, metric.WithInstrumentationVersion(scopeVersion))}
	r := &Recipes{
		acquire: in.histogram(AcquireDuration,
			"Time an acquire took (queueing and waiting), by recipe kind and outcome.", acquireBuckets),
		holds: in.upDown(HoldActive, "{hold}",
			"Holds (lock nodes, leases, leader terms) held and trusted now, by recipe kind."),
		losses: in.counter(HoldLosses, "{hold}",
			"Holds that stopped being trusted before their release, by recipe kind and reason."),
		leading: in.upDown(LeaderLeading, "{leader}",
			"Leader latches and selectors of this process that lead now (1 per leading participant)."),
	}
	if cacheable {
		if prev, loaded := recipes.LoadOrStore(mp, r); loaded {
			return prev.(*Recipes)
		}
	}
	return r
}

// Recipe returns the instruments of one recipe of kind on path; path is
// recorded only if withPath (the client's WithMetricPathAttribute).
func (rs *Recipes) Recipe(kind Kind, path string, withPath bool) *Recipe {
	if withPath {
		return rs.newRecipe(kind, []attribute.KeyValue{KeyPath.String(path)})
	}
	if r, ok := rs.kinds.Load(kind); ok {
		return r.(*Recipe)
	}
	r, _ := rs.kinds.LoadOrStore(kind, rs.newRecipe(kind, nil))
	return r.(*Recipe)
}

func (rs *Recipes) newRecipe(kind Kind, extra []attribute.KeyValue) *Recipe {
	with := func(kvs ...attribute.KeyValue) attribute.Set {
		return attribute.NewSet(append(append([]attribute.KeyValue{KeyKind.String(string(kind))}, extra...), kvs...)...)
	}
	r := &Recipe{rs: rs}
	for o := range numOutcomes {
		r.acquireOpts[o] = []metric.RecordOption{metric.WithAttributeSet(with(KeyOutcome.String(o.String())))}
	}
	r.kindOpts = []metric.AddOption{metric.WithAttributeSet(with())}
	for reason := range numReasons {
		r.lossOpts[reason] = []metric.AddOption{metric.WithAttributeSet(with(KeyReason.String(reason.String())))}
	}
	return r
}

// Recipe is the instruments of one recipe (kind, and path with the path
// option), with their attribute sets built. A nil *Recipe records nothing.
type Recipe struct {
	rs          *Recipes
	acquireOpts [numOutcomes][]metric.RecordOption
	kindOpts    []metric.AddOption
	lossOpts    [numReasons][]metric.AddOption
}

// Acquire records one acquire that began at start and ended with outcome.
func (r *Recipe) Acquire(ctx context.Context, start time.Time, outcome Outcome) {
	if r == nil {
		return
	}
	r.rs.acquire.Record(ctx, time.Since(start).Seconds(), r.acquireOpts[outcome]...)
}

// HoldStarted counts a hold that is now held.
func (r *Recipe) HoldStarted() {
	if r == nil {
		return
	}
	r.rs.holds.Add(context.Background(), 1, r.kindOpts...)
}

// HoldEnded counts a hold that is no longer held: released (lost false) or
// lost for reason.
func (r *Recipe) HoldEnded(lost bool, reason Reason) {
	if r == nil {
		return
	}
	r.rs.holds.Add(context.Background(), -1, r.kindOpts...)
	if lost {
		r.rs.losses.Add(context.Background(), 1, r.lossOpts[reason]...)
	}
}

// Leading counts a participant that began (true) or stopped (false)
// leading.
func (r *Recipe) Leading(leads bool) {
	if r == nil {
		return
	}
	d := int64(-1)
	if leads {
		d = 1
	}
	r.rs.leading.Add(context.Background(), d, r.kindOpts...)
}
