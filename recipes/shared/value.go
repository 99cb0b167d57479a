package shared

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
)

// The recipes' names in their errors.
const (
	valueRecipe = "shared value"
	countRecipe = "shared count"
)

// The errors of this package's own; those every recipe shares are the
// module's (zkrecipes.ErrClosed, zkrecipes.ErrNodeDeleted, ...).
var (
	// ErrUnversioned: TrySet given a value without a version to compare:
	// one never read from the node (Version -1, as Curator's initial value)
	// or whose version wrapped around to -1, which ZooKeeper would take as
	// "any version" (Curator's IllegalTrySetVersionException).
	ErrUnversioned = errors.New("value has no version to compare")
)

// Versioned is a value as read from the node, with what orders it.
type Versioned[T any] struct {
	Value T
	// Version is the node's data version (Stat.Version), which TrySet
	// compares; -1 for a value never read (the seed before Start).
	Version int32
	// Zxid is the zxid of the write that made this value (Stat.Mzxid),
	// as Curator's VersionedValue.getZxid: it only grows, even when the
	// node is deleted and made again.
	Zxid int64
	// Stale is nil for a value known current. On a subscription, the value
	// held comes again with Stale set (wrapping zkrecipes.ErrStale and why,
	// as Err) when it may have gone stale (the link dropped, a read
	// failed), and again with Stale nil once it is read again: Curator's
	// stateChanged. Get, Set and TrySet leave it nil (Get's error says it).
	Stale error
}

// Value is a Curator SharedValue: a byte slice shared through one node.
// Its methods may be called from any goroutine; make one with NewValue.
type Value struct {
	recipe string
	client *framework.Client
	path   string
	seed   []byte
	rt     *framework.Runtime

	// feed delivers the values read or written; counts, those of a
	// Count's Value, decoded. Both are published under mu, so a
	// subscription made under mu begins where the feed stands.
	feed    framework.Feed[Versioned[[]byte]]
	isCount bool
	counts  framework.Feed[Versioned[int32]]

	mu       sync.Mutex
	cur      Versioned[[]byte]
	curCzxid int64 // the czxid of the node cur was read from (0: none)
	missing  bool  // the follower's last read found no node
	readErr  error // the follower's last read failed with it
	// link is the link the follower's last read went over; the value may
	// be stale once it is down (its Suspended is closed), until a read
	// over a new one. Zero until the first read.
	link conn.Session
	// told is what the subscriptions were last told of the value's
	// staleness: nil (current), or why it may be stale.
	told error
}

// NewValue returns a Value on path whose node, if missing when Start runs,
// is made with seed. Nothing is sent before Start.
func NewValue(client *framework.Client, path string, seed []byte) (*Value, error) {
	return newValue(valueRecipe, client, path, seed)
}

func newValue(recipe string, client *framework.Client, path string, seed []byte) (*Value, error) {
	if client == nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	// The seed is the data of the node Start makes.
	if err := client.CheckCreate(path, seed, framework.WithParentContainers()); err != nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("seed of %d bytes: %w", len(seed), err))
	}
	seed = bytes.Clone(seed)
	if seed == nil {
		seed = []byte{}
	}
	return &Value{
		recipe:  recipe,
		client:  client,
		path:    path,
		seed:    seed,
		rt:      framework.NewRuntime(client, recipe, path),
		isCount: recipe == countRecipe,
		cur:     Versioned[[]byte]{Value: seed, Version: -1, Zxid: -1},
	}, nil
}

// usable says why v cannot be used: it is nil or a zero Value.
func (v *Value) usable() error {
	if v == nil || v.client == nil {
		return framework.Invalid(valueRecipe, "Value", "NewValue")
	}
	return nil
}

// err names the recipe and its path in err.
func (v *Value) err(err error) error { return framework.RecipeErr(v.recipe, v.path, err) }

// Path returns the node's path.
func (v *Value) Path() string {
	if v == nil {
		return ""
	}
	return v.path
}

// Start makes the node with the seed (and its parents, as containers) if it
// is missing, reads it, and follows it with a watch until Close. It returns
// once the value has been read and the watch is set, or with ctx's error
// (then nothing keeps running, and Start may be called again). A node this
// client may not read fails it with the server's zk.ErrNoAuth. A second
// Start after one succeeded fails with zkrecipes.ErrStarted.
func (v *Value) Start(ctx context.Context) error {
	if err := v.usable(); err != nil {
		return err
	}
	return v.rt.Start(ctx, v.begin)
}

// begin makes the node if it is missing and starts the follower; it
// returns once the follower has read the node and set its watch.
func (v *Value) begin(ctx context.Context) error {
	_, err := v.client.Create(ctx, v.path, v.seed, framework.WithParentContainers())
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return engine.Err(err, false)
	}
	armed, refused := make(chan struct{}), make(chan error, 1)
	if !v.rt.Go(func(life context.Context) { v.follow(life, armed, refused) }) {
		return zkrecipes.ErrClosed
	}
	select {
	case <-armed:
		// ctx may have ended as the read came in: the caller has given up.
		return ctx.Err()
	case err := <-refused:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// follow reads the node with a watch, and again on every change, and again
// over each new link, until life ends or the client closes. armed is closed
// after its first read; before it, a read the server refuses for good (no
// READ permission) is sent to refused, for Start to fail with.
func (v *Value) follow(life context.Context, armed chan struct{}, refused chan<- error) {
	c := v.client
	once := sync.OnceFunc(func() { close(armed) })
	pacer := v.rt.Pacer()
	for life.Err() == nil {
		// Taken before the read: if the link drops during it, the value
		// counts as stale until the next read.
		link := c.Session()
		if !c.State().IsConnected() {
			if _, err := c.WaitConnected(life); err != nil {
				return
			}
			continue
		}
		wctx, wcancel := context.WithCancel(life)
		data, st, watch, err := c.GetW(wctx, v.path)
		if errors.Is(err, zk.ErrNoNode) {
			var exists bool
			exists, _, watch, err = c.ExistsW(wctx, v.path)
			if err == nil && exists {
				wcancel()
				continue // made meanwhile: read it
			}
			if err == nil {
				v.observeMissing(link)
			}
		} else if err == nil {
			v.observe(data, st, &link)
		}
		if err != nil {
			wcancel()
			if life.Err() != nil || errors.Is(err, zkrecipes.ErrClosed) {
				return
			}
			v.readFailed(err)
			v.goStale()
			if errors.Is(err, zk.ErrNoAuth) {
				select {
				case refused <- err:
				default:
				}
			}
			if !v.rt.Retry(life, pacer, err) {
				return
			}
			continue
		}
		pacer.Reset()
		once()
		select {
		case <-watch: // changed, made, deleted, or the watch ended: read again
		case <-link.Suspended: // read again over the next link
			v.goStale()
		case <-life.Done():
		}
		wcancel()
	}
}

// goStale tells the subscriptions that the value held may be stale, once
// until it is read again.
func (v *Value) goStale() {
	err := v.staleness()
	if err == nil || !errors.Is(err, zkrecipes.ErrStale) {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.told != nil || v.rt.Closed() {
		return
	}
	v.told = err
	v.publishLocked()
}

// observe takes a value read or written, if it is newer than the one held,
// and delivers it. link, if not nil, is the follower's link for the read.
func (v *Value) observe(data []byte, st *zk.Stat, link *conn.Session) {
	v.mu.Lock()
	defer v.mu.Unlock()
	wasStale := false
	if link != nil {
		// Read again over the follower's link: current.
		v.link, v.missing, v.readErr = *link, false, nil
		wasStale, v.told = v.told != nil, nil
	}
	if st.Mzxid <= v.cur.Zxid {
		if wasStale {
			v.publishLocked() // the same value, current again
		}
		return
	}
	v.cur = Versioned[[]byte]{Value: bytes.Clone(data), Version: st.Version, Zxid: st.Mzxid}
	v.curCzxid = st.Czxid
	if v.cur.Value == nil {
		v.cur.Value = []byte{}
	}
	v.publishLocked()
}

// publishLocked hands cur to the subscriptions, with what they are told of
// its staleness: a copy, which they share, so that none can change cur.
func (v *Value) publishLocked() {
	out := v.copyLocked()
	out.Stale = v.told
	v.feed.Publish(out)
	if v.isCount {
		if n, ok := decodeVersioned(out); ok {
			v.counts.Publish(n)
		}
	}
}

func (v *Value) observeMissing(link conn.Session) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.link, v.missing, v.readErr = link, true, nil
}

func (v *Value) readFailed(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.readErr = err
}

// Get returns the value last read or written, with its version. It sends
// nothing; Err says whether it may be stale. After Close, or the client's,
// it fails with zkrecipes.ErrClosed.
func (v *Value) Get() (Versioned[[]byte], error) {
	if err := v.usable(); err != nil {
		return Versioned[[]byte]{}, err
	}
	if err := v.rt.Ready(context.Background()); err != nil {
		return Versioned[[]byte]{}, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.copyLocked(), nil
}

func (v *Value) copyLocked() Versioned[[]byte] {
	out := v.cur
	out.Value = bytes.Clone(out.Value)
	return out
}

// Err is nil while Get returns the node's latest value as far as
// ZooKeeper's watches can tell: the value was read over the client's
// current link and the watch is set. Otherwise it wraps zkrecipes.ErrStale and the
// reason: zkrecipes.ErrSuspended (the link is down; the session may live on),
// zkrecipes.ErrSessionLost (the session is gone), zkrecipes.ErrNodeDeleted (the node is missing),
// the error of a read that failed (it is tried again), or nothing more
// while the value is being read again. After Close, or
// the client's, it is zkrecipes.ErrClosed; before Start, zkrecipes.ErrNotStarted.
func (v *Value) Err() error {
	if err := v.usable(); err != nil {
		return err
	}
	return v.err(v.staleness())
}

// staleness says why the value may be stale; before Start has returned
// (the follower's first reads) and after Close, why it cannot be read.
func (v *Value) staleness() error {
	if err := v.rt.Ready(context.Background()); err != nil {
		return err
	}
	v.mu.Lock()
	link, missing, readErr := v.link, v.missing, v.readErr
	v.mu.Unlock()
	switch v.client.State() {
	case conn.StateClosed:
		return zkrecipes.ErrClosed
	case conn.StateLost:
		return fmt.Errorf("%w: %w", zkrecipes.ErrStale, zkrecipes.ErrSessionLost)
	case conn.StateSuspended:
		return fmt.Errorf("%w: %w", zkrecipes.ErrStale, zkrecipes.ErrSuspended)
	}
	select {
	case <-link.Suspended:
		return fmt.Errorf("%w: reading it again over a new link", zkrecipes.ErrStale)
	default:
	}
	if readErr != nil {
		return fmt.Errorf("%w: reading it failed: %w", zkrecipes.ErrStale, readErr)
	}
	if missing {
		return fmt.Errorf("%w: %w", zkrecipes.ErrStale, zkrecipes.ErrNodeDeleted)
	}
	return nil
}

// Set writes value whatever the node holds, and returns it with its new
// version. A reply lost on the way is retried: the write may then land
// after someone else's.
func (v *Value) Set(ctx context.Context, value []byte) (Versioned[[]byte], error) {
	if err := v.writable(ctx); err != nil {
		return Versioned[[]byte]{}, err
	}
	st, err := v.client.Set(ctx, v.path, value, -1)
	if err != nil {
		return Versioned[[]byte]{}, v.writeErr(err)
	}
	v.observe(value, st, nil)
	return Versioned[[]byte]{Value: bytes.Clone(value), Version: st.Version, Zxid: st.Mzxid}, nil
}

// TrySet writes value only if the node is still at previous's version, as
// read by Get (or returned by Set or TrySet), and reports whether it did.
//
// On success it returns value with its new version. When someone else
// changed the node first it returns false and the value held, read again
// from the node (unless that read fails: the watch then brings it), so a
// caller can retry at once with what it returns. The write is sent at most
// once: if its reply is lost the error wraps zkrecipes.ErrOutcomeUnknown, and the
// write may have been applied; the change feed will tell.
func (v *Value) TrySet(ctx context.Context, previous Versioned[[]byte], value []byte) (Versioned[[]byte], bool, error) {
	if err := v.writable(ctx); err != nil {
		return Versioned[[]byte]{}, false, err
	}
	if previous.Version == -1 {
		return Versioned[[]byte]{}, false, v.err(ErrUnversioned)
	}
	v.mu.Lock()
	held, heldCzxid := v.copyLocked(), v.curCzxid
	v.mu.Unlock()
	if previous.Zxid < held.Zxid {
		// Already changed since previous was read: no need to ask.
		return held, false, nil
	}
	res, err := v.client.MultiOnce(ctx, &zk.SetDataRequest{Path: v.path, Data: value, Version: previous.Version})
	if errors.Is(err, zk.ErrBadVersion) {
		if data, st, rerr := v.client.Get(ctx, v.path); rerr == nil {
			v.observe(data, st, nil)
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.copyLocked(), false, nil
	}
	if err != nil {
		return Versioned[[]byte]{}, false, v.writeErr(err)
	}
	st := res[0].Stat
	v.observe(value, st, nil)
	out := Versioned[[]byte]{Value: bytes.Clone(value), Version: st.Version, Zxid: st.Mzxid}
	if previous.Zxid == held.Zxid && heldCzxid != 0 && st.Czxid != heldCzxid {
		// ZooKeeper compares versions only: the node previous was read
		// from was deleted and made again, back at that version, and the
		// write replaced a value previous never showed. Applied, so not
		// a refusal (a caller would apply it again), and not a success.
		return out, false, v.err(fmt.Errorf("%w: czxid %d, read from %d", zkrecipes.ErrRecreated, st.Czxid, heldCzxid))
	}
	return out, true, nil
}

// writable refuses a write with a nil ctx, or on a value nil, zero, not
// started, closed, or on a closed client, before anything is sent.
func (v *Value) writable(ctx context.Context) error {
	if err := v.usable(); err != nil {
		return err
	}
	return v.rt.Ready(ctx)
}

func (v *Value) writeErr(err error) error {
	if errors.Is(err, zk.ErrNoNode) {
		return v.err(fmt.Errorf("%w: %w", zkrecipes.ErrNodeDeleted, err))
	}
	return v.err(engine.Err(err, v.rt.Closed()))
}

// Subscribe returns a subscription to the values read or written from now
// on, beginning with the one held (once Start has read it): each newer
// than the one before, in the order ZooKeeper applied them, several
// changes between two reads arriving as the last of them (see the package
// documentation). Its channel is closed after Close of the Value, once the
// values queued before have been taken, or at once by Close of the
// subscription. A reader that stops reading before then must Close the
// subscription: its goroutine waits for the reader. The subscriptions of
// a Value share each value's bytes: a reader must not change them (Get
// returns a copy of its own). A reader that falls more than framework.DefaultBound
// changes behind is told, never skipped silently: the subscription ends,
// its Err wrapping zkrecipes.ErrFellBehind (docs/vocabulary.md).
// A nil or zero Value's subscription has ended.
func (v *Value) Subscribe() *framework.Subscription[Versioned[[]byte]] {
	if v.usable() != nil {
		return ended[Versioned[[]byte]]()
	}
	return subscribe(v, &v.feed, func(b Versioned[[]byte]) (Versioned[[]byte], bool) { return b, true })
}

// subscribe subscribes to feed, one of v's, its first value the one held
// (if it has been read and convert takes it).
func subscribe[T any](v *Value, feed *framework.Feed[T], convert func(Versioned[[]byte]) (T, bool)) *framework.Subscription[T] {
	v.mu.Lock()
	defer v.mu.Unlock()
	// Whatever has been read is delivered, even before Start returns: the
	// follower's first read may have been published before this
	// subscription existed.
	if !v.rt.Closed() && (v.rt.Started() || v.cur.Version != -1) {
		now := v.copyLocked()
		now.Stale = v.told
		if x, ok := convert(now); ok {
			return feed.SubscribeWith(x)
		}
	}
	return feed.Subscribe()
}

// ended returns a subscription that has ended.
func ended[T any]() *framework.Subscription[T] {
	var f framework.Feed[T]
	f.End(nil)
	return f.Subscribe()
}

// Close stops following the node, ends a Start in progress with
// zkrecipes.ErrClosed, and ends every subscription (each delivers what it
// had queued, then its channel is closed). A Value makes no ephemeral
// node, so it deletes nothing: the node belongs to no session and stays as
// it is. The client is not closed. Close waits for the follower's
// goroutine, which ends at once; it is idempotent and returns nil.
func (v *Value) Close() error {
	if err := v.usable(); err != nil {
		return err
	}
	return v.rt.Close(func(context.Context) error {
		v.feed.End(nil)
		v.counts.End(nil)
		return nil
	})
}
