// Package metrics holds the OpenTelemetry instruments of one
// framework.Client: made once, when the client is, so that the recipes and
// the framework only call methods here. The instruments, their names,
// units and attributes are the table in the README ("Running in
// production"); Instruments lists them for the test that checks the two
// agree.
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
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/internal/errs"
)

// ScopeName is the instrumentation scope (the meter's name): the module.
const ScopeName = "github.com/zkrecipes/zkrecipes"

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

// Instrument describes one instrument, as the README's table does.
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

// Kind is a recipe, as the kind attribute names it.
type Kind int

// The recipes.
const (
	Mutex Kind = iota
	RWLockRead
	RWLockWrite
	Semaphore
	SemaphoreMutex
	Latch
	Selector
	numKinds
)

var kindNames = [numKinds]string{"mutex", "rwlock_read", "rwlock_write", "semaphore", "semaphore_mutex", "latch", "selector"}

// String is the kind attribute's value.
func (k Kind) String() string { return kindNames[k] }

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

// OutcomeOf classifies an acquire's error (nil: acquired).
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Acquired
	case errors.Is(err, errs.ErrWouldBlock):
		return WouldBlock
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout
	case errors.Is(err, context.Canceled), errors.Is(err, errs.ErrClosed):
		return Cancelled
	}
	return Failed
}

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
	case errors.Is(err, zk.ErrClosing), errors.Is(err, errs.ErrClosed):
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
	pathAttr bool

	stateChanges metric.Int64Counter
	established  metric.Int64Counter
	request      metric.Float64Histogram
	acquire      metric.Float64Histogram
	holds        metric.Int64UpDownCounter
	losses       metric.Int64Counter
	leading      metric.Int64UpDownCounter
	registration metric.Registration

	stateOpts map[conn.State][]metric.AddOption
	reqOpts   [numOps][numErrTypes][]metric.RecordOption
	kinds     [numKinds]*Recipe // without a path attribute
}

// New makes the instruments from mp. pathAttr adds the recipe's path to
// the recipes' instruments. The error says which instruments could not be
// made; those are no-ops, and the rest work.
func New(mp metric.MeterProvider, pathAttr bool, obs Observed) (*Client, error) {
	m := mp.Meter(ScopeName)
	var errList []error
	check := func(err error) {
		if err != nil {
			errList = append(errList, err)
		}
	}
	fallback := noop.Meter{}
	c := &Client{pathAttr: pathAttr}
	var err error
	if c.stateChanges, err = m.Int64Counter(SessionStateChanges, metric.WithUnit("{change}"),
		metric.WithDescription("Connection state changes of the client's ZooKeeper session, by the state entered.")); err != nil {
		check(err)
		c.stateChanges, _ = fallback.Int64Counter("")
	}
	if c.established, err = m.Int64Counter(SessionEstablished, metric.WithUnit("{session}"),
		metric.WithDescription("ZooKeeper sessions established (a new session id): the first, and each after a loss.")); err != nil {
		check(err)
		c.established, _ = fallback.Int64Counter("")
	}
	if c.request, err = m.Float64Histogram(RequestDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of ZooKeeper requests, by operation; each attempt of a retried call counts."),
		metric.WithExplicitBucketBoundaries(requestBuckets...)); err != nil {
		check(err)
		c.request, _ = fallback.Float64Histogram("")
	}
	if c.acquire, err = m.Float64Histogram(AcquireDuration, metric.WithUnit("s"),
		metric.WithDescription("Time an acquire took (queueing and waiting), by recipe kind and outcome."),
		metric.WithExplicitBucketBoundaries(acquireBuckets...)); err != nil {
		check(err)
		c.acquire, _ = fallback.Float64Histogram("")
	}
	if c.holds, err = m.Int64UpDownCounter(HoldActive, metric.WithUnit("{hold}"),
		metric.WithDescription("Holds (lock nodes, leases, leader terms) held and trusted now, by recipe kind.")); err != nil {
		check(err)
		c.holds, _ = fallback.Int64UpDownCounter("")
	}
	if c.losses, err = m.Int64Counter(HoldLosses, metric.WithUnit("{hold}"),
		metric.WithDescription("Holds that stopped being trusted before their release, by recipe kind and reason.")); err != nil {
		check(err)
		c.losses, _ = fallback.Int64Counter("")
	}
	if c.leading, err = m.Int64UpDownCounter(LeaderLeading, metric.WithUnit("{leader}"),
		metric.WithDescription("Leader latches and selectors of this process that lead now (1 per leading participant).")); err != nil {
		check(err)
		c.leading, _ = fallback.Int64UpDownCounter("")
	}
	connected, err := m.Int64ObservableUpDownCounter(SessionConnected, metric.WithUnit("{session}"),
		metric.WithDescription("1 while the client's session is connected, else 0."))
	check(err)
	pending, err := m.Int64ObservableUpDownCounter(DeletePending, metric.WithUnit("{delete}"),
		metric.WithDescription("Guaranteed deletes the client is still retrying in the background."))
	check(err)
	if connected != nil && pending != nil && obs.Connected != nil && obs.PendingDeletes != nil {
		reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			up := int64(0)
			if obs.Connected() {
				up = 1
			}
			o.ObserveInt64(connected, up)
			o.ObserveInt64(pending, int64(obs.PendingDeletes()))
			return nil
		}, connected, pending)
		check(err)
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
	for k := range numKinds {
		c.kinds[k] = c.newRecipe(k, nil)
	}
	return c, errors.Join(errList...)
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

// Recipe returns the instruments of one recipe of kind on path (the path
// is only recorded with the path option).
func (c *Client) Recipe(kind Kind, path string) *Recipe {
	if c == nil {
		return nil
	}
	if !c.pathAttr {
		return c.kinds[kind]
	}
	return c.newRecipe(kind, []attribute.KeyValue{KeyPath.String(path)})
}

func (c *Client) newRecipe(kind Kind, extra []attribute.KeyValue) *Recipe {
	with := func(kvs ...attribute.KeyValue) attribute.Set {
		return attribute.NewSet(append(append([]attribute.KeyValue{KeyKind.String(kind.String())}, extra...), kvs...)...)
	}
	r := &Recipe{c: c}
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
	c           *Client
	acquireOpts [numOutcomes][]metric.RecordOption
	kindOpts    []metric.AddOption
	lossOpts    [numReasons][]metric.AddOption
}

// Acquire records one acquire that began at start and ended with err.
func (r *Recipe) Acquire(ctx context.Context, start time.Time, err error) {
	if r == nil {
		return
	}
	r.c.acquire.Record(ctx, time.Since(start).Seconds(), r.acquireOpts[OutcomeOf(err)]...)
}

// HoldStarted counts a hold that is now held.
func (r *Recipe) HoldStarted() {
	if r == nil {
		return
	}
	r.c.holds.Add(context.Background(), 1, r.kindOpts...)
}

// HoldEnded counts a hold that is no longer held: released (lost false) or
// lost for reason.
func (r *Recipe) HoldEnded(lost bool, reason Reason) {
	if r == nil {
		return
	}
	r.c.holds.Add(context.Background(), -1, r.kindOpts...)
	if lost {
		r.c.losses.Add(context.Background(), 1, r.lossOpts[reason]...)
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
	r.c.leading.Add(context.Background(), d, r.kindOpts...)
}
