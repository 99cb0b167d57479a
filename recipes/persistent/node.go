package persistent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/retry"
)

// The recipes' names in their errors.
const (
	nodeRecipe = "persistent node"
	ttlRecipe  = "persistent ttl node"
)

// The errors of this package's own; those every recipe shares are the
// module's (zkrecipes.ErrClosed, zkrecipes.ErrSuspended, ...).
var (
	// ErrNotInPlace is Err's error while the node is not known to be in
	// place with the latest data; it also matches the reason
	// (zkrecipes.ErrSuspended, zkrecipes.ErrSessionLost,
	// zkrecipes.ErrNodeDeleted, ErrOtherOwner, or the error of a request
	// that failed).
	ErrNotInPlace = errors.New("node not in place")
	// ErrOtherOwner: an ephemeral node of another session is at the
	// node's path (a process that used the same path, or this one's own
	// previous session, not yet expired). The Node waits for it to go and
	// then makes its own; it never writes into another session's node.
	ErrOtherOwner = errors.New("path taken by an ephemeral node of another session")
)

// Status is where the node stands, as a Node's Subscribe delivers it.
type Status struct {
	// InPlace is true while the node exists, the Node's latest data (Set)
	// was written to it, and, for an ephemeral node, it belongs to the
	// client's current session, as last checked over the current link; a
	// persistent or TTL-mode node is never another session's ephemeral.
	// A write by someone else is not undone, as Curator's PersistentNode
	// (which only sets its watch again on a data change): the node keeps
	// that data, and stays in place, until the next Set or re-creation.
	InPlace bool
	// Path is the node's actual path (with the protected prefix and the
	// sequence number, if any); "" before it was first made.
	Path string
	// Czxid is the zxid that made the node in place (0 when not in
	// place): each re-creation has a higher one.
	Czxid int64
	// Owner is the session that owns the ephemeral node in place (0 for a
	// persistent node, or when not in place).
	Owner int64
	// Err says why the node is not in place (nil when it is). It wraps
	// the reason, as Err's error does.
	Err error
}

func (s Status) same(o Status) bool {
	if s.InPlace != o.InPlace || s.Path != o.Path || s.Czxid != o.Czxid || s.Owner != o.Owner {
		return false
	}
	if (s.Err == nil) != (o.Err == nil) {
		return false
	}
	return s.Err == nil || s.Err.Error() == o.Err.Error()
}

// Node is a Curator PersistentNode: a node that a process keeps in place
// from Start to Close, making it again whenever it goes (session loss,
// a delete by someone else). Its methods may be called from any
// goroutine; make one with New.
type Node struct {
	client     *framework.Client
	rt         *framework.Runtime // started and closed, the keeper's life
	path       string
	mode       framework.CreateMode // of the first create
	protected  bool
	ttl        time.Duration
	keepOnExit bool // a TTLNode's container: left for the server to reap

	creates sync.WaitGroup // creates sent at most once, abandoned ones too
	kick    chan struct{}
	// leaving is closed once the last stop's delete is on its way (or
	// handed to the client's background deletes): a new Start waits for
	// it, so that it never makes a node that delete would take.
	leaving chan struct{}

	feed framework.Feed[Status] // published under mu

	mu sync.Mutex
	// keeping: a keeper keeps the node, from the Start that began it
	// (still under way, or returned nil) to Close, or to that Start's
	// failure: Set and Wait go on while it does.
	keeping bool
	keeper  keeper // the running keeper's, for a Start that fails
	data    []byte
	gen     uint64 // counts Sets: data's generation
	written uint64 // the generation known to be on the node in place
	actual  string // the node's name once first made
	status  Status
	link    conn.Session // the link status was checked over
	// mine: the node at actual is this Node's (it made it, or found it
	// there and took it, as Curator does: a persistent node, or an
	// ephemeral of the current session); Close deletes only such a node.
	mine bool
	// doubt: a create of this Node's may have made the node without its
	// knowing (its reply was lost, or it was abandoned mid-flight); a
	// look settles it.
	doubt bool
	// owner: for an ephemeral node, the session of the node that is
	// this Node's, or of the create in doubt (0: none).
	owner    int64
	inflight chan struct{} // closed when the last create sent at most once is out of the client
	changed  chan struct{}
}

// New returns a Node at path with data: by default an ephemeral node at
// exactly path (Curator's CreateMode.EPHEMERAL); Protected, Sequential,
// Persistent and WithTTL choose another kind. Missing parents are made as
// containers, as Curator's default (useParentCreation). Nothing is sent
// before Start; data too large for the node, and bad options, are refused
// now.
func New(client *framework.Client, path string, data []byte, opts ...Option) (*Node, error) {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o.applyNode(&cfg)
		}
	}
	return newNode(nodeRecipe, client, path, data, cfg)
}

func newNode(recipe string, client *framework.Client, path string, data []byte, cfg config) (*Node, error) {
	if client == nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	if cfg.err != nil {
		return nil, framework.RecipeErr(recipe, path, cfg.err)
	}
	n := &Node{
		client: client,
		rt:     framework.NewRuntime(client, recipe, path),
		path:   path,
		// A sequential name cannot be found again after a lost reply
		// unless it is protected: Sequential implies Protected.
		protected: cfg.protected || cfg.sequential,
		ttl:       cfg.ttl,
		kick:      make(chan struct{}, 1),
		changed:   make(chan struct{}),
		data:      bytes.Clone(data),
		gen:       1, // New's data; written is 0 until it is on the node
	}
	switch {
	case cfg.container:
		n.mode, n.keepOnExit = framework.Container, true
	case cfg.ttl > 0 && cfg.sequential:
		n.mode = framework.PersistentSequentialWithTTL
	case cfg.ttl > 0:
		n.mode = framework.PersistentWithTTL
	case cfg.persistent && cfg.sequential:
		n.mode = framework.PersistentSequential
	case cfg.persistent:
		n.mode = framework.Persistent
	case cfg.sequential:
		n.mode = framework.EphemeralSequential
	default:
		n.mode = framework.Ephemeral
	}
	if n.data == nil {
		n.data = []byte{}
	}
	if err := n.check("new", data); err != nil {
		return nil, n.err(err)
	}
	n.status = Status{Err: fmt.Errorf("%w: %w", ErrNotInPlace, zkrecipes.ErrNotStarted)}
	return n, nil
}

// check refuses data the server would refuse in the node's create (the
// stricter of its create and its set: the node is made again with it), for
// op ("new" or "set"), which the error names.
func (n *Node) check(op string, data []byte) error {
	err := n.client.CheckCreate(n.path, data, n.createOptions(true)...)
	if err == nil {
		return nil
	}
	var oe *framework.OpError
	if errors.As(err, &oe) {
		err = oe.Err // measured as a create; refused for the caller's op
	}
	return fmt.Errorf("%s: data of %d bytes: %w", op, len(data), err)
}

func (n *Node) ephemeral() bool {
	return n.mode == framework.Ephemeral || n.mode == framework.EphemeralSequential
}

// again is the mode of a re-creation: the name is known, so it is never
// sequential again.
func (n *Node) again() framework.CreateMode {
	switch n.mode {
	case framework.EphemeralSequential:
		return framework.Ephemeral
	case framework.PersistentSequential:
		return framework.Persistent
	case framework.PersistentSequentialWithTTL:
		return framework.PersistentWithTTL
	}
	return n.mode
}

// createOptions are the options of the first create (first) or of a
// re-creation at the name already made.
func (n *Node) createOptions(first bool) []framework.CreateOption {
	mode := n.mode
	if !first {
		mode = n.again()
	}
	opts := []framework.CreateOption{framework.WithMode(mode), framework.WithParentContainers()}
	if n.ttl > 0 {
		opts = append(opts, framework.WithTTL(n.ttl))
	}
	switch {
	case n.protected && first:
		opts = append(opts, framework.Protected())
	case n.protected:
		// The protected name carries a UUID of ours: nobody else makes it.
		opts = append(opts, framework.UniqueName())
	default:
		// At an exact name another client may also make: resent after a
		// lost reply, the create would fail with NodeExists on its own
		// node and could not tell it from another's. Sent at most once,
		// an unknown outcome is settled by looking (ownership is checked
		// next; Close looks too: see stop).
		opts = append(opts, framework.CreateAtMostOnce())
	}
	return opts
}

// usable says why n cannot be used: it is nil or a zero Node.
func (n *Node) usable() error {
	if n == nil || n.rt == nil {
		return framework.Invalid(nodeRecipe, "Node", "New")
	}
	return nil
}

func (n *Node) err(err error) error { return n.rt.Err(err) }

// Path returns the path the Node was made with (without the protected
// prefix or the sequence number: see ActualPath).
func (n *Node) Path() string {
	if n == nil {
		return ""
	}
	return n.path
}

// ActualPath returns the node's path as made (with the protected prefix and
// the sequence number, if any), as Curator's getActualPath; "" before it
// was first made.
func (n *Node) ActualPath() string {
	if n.usable() != nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.actual
}

// Data returns the data the node is kept with: the last Set's, or New's.
func (n *Node) Data() []byte {
	if n.usable() != nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return bytes.Clone(n.data)
}

// keeper is the stop of a running keeper: a Start that fails ends it, and
// waits for it, before it deletes what it made (Close's Runtime ends it
// with the rest of the Node's background work).
type keeper struct {
	stop context.CancelFunc
	done <-chan struct{} // closed when it has returned
}

// Start makes the node (and its missing parents, as containers) and keeps
// it in place until Close. It returns once the node is in place, or with
// ctx's error, leaving nothing behind (Start may then be called again). An
// ephemeral node of another session at the path is waited for: it is never
// taken over. A second Start after one succeeded fails with
// zkrecipes.ErrStarted.
func (n *Node) Start(ctx context.Context) error {
	if err := n.usable(); err != nil {
		return err
	}
	return n.start(ctx, n.begin)
}

// start is the Runtime's Start of begin. Runtime.Start words a ctx that
// ended as ctx's error alone; begin's error also says why the node was
// not in place by then (ErrOtherOwner), the one cause a caller can act on,
// so that error is returned instead when it wraps ctx's.
func (n *Node) start(ctx context.Context, begin func(ctx context.Context) error) error {
	var failed error
	err := n.rt.Start(ctx, func(ctx context.Context) error {
		failed = begin(ctx)
		return failed
	})
	if err != nil && failed != nil && ctx != nil && ctx.Err() != nil && errors.Is(failed, ctx.Err()) {
		return n.err(failed)
	}
	return err
}

// begin starts the keeper and waits until the node is in place; if that
// fails, it undoes what it did.
func (n *Node) begin(ctx context.Context) error {
	if err := n.keep(ctx); err != nil {
		return err
	}
	if err := n.wait(ctx, 0); err != nil {
		n.undo()
		return err
	}
	return nil
}

// keep starts the keeper (run) as the Node's background work, once the
// last stop's delete is on its way.
func (n *Node) keep(ctx context.Context) error {
	n.mu.Lock()
	leaving := n.leaving
	n.mu.Unlock()
	if leaving != nil {
		select {
		case <-leaving:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	quit, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	n.mu.Lock()
	n.keeping = true
	n.keeper = keeper{stop: stop, done: done}
	n.setStatusLocked(Status{Err: fmt.Errorf("%w: being made", ErrNotInPlace)}, conn.Session{})
	n.mu.Unlock()
	sub := n.client.Subscribe()
	ok := n.rt.Go(func(life context.Context) {
		defer close(done)
		life, cancel := context.WithCancel(life)
		defer cancel()
		defer context.AfterFunc(quit, cancel)()
		n.run(life, sub)
		// A Wait or Set under way looks again: at Close, it is over.
		n.mu.Lock()
		n.wakeLocked()
		n.mu.Unlock()
	})
	if !ok {
		sub.Close()
		close(done)
		n.undo()
		return zkrecipes.ErrClosed
	}
	return nil
}

// undo ends the keeper and deletes the node it made, for a Start that
// failed: nothing is left behind, and the Node forgets the node's name
// (the next Start makes it anew).
func (n *Node) undo() {
	n.mu.Lock()
	k := n.keeper
	n.keeper = keeper{}
	n.mu.Unlock()
	if k.stop != nil {
		k.stop()
		<-k.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.client.ReleaseTimeout())
	defer cancel()
	n.stop(ctx, true)
	n.mu.Lock()
	n.keeping = false
	n.setStatusLocked(Status{Err: fmt.Errorf("%w: %w", ErrNotInPlace, zkrecipes.ErrNotStarted)}, conn.Session{})
	n.mu.Unlock()
}

// Close stops keeping the node and deletes it (of any kind, as Curator's
// close), guaranteed: an ephemeral node only while it is still the one
// this Node's session made. It ends a Start in progress with
// zkrecipes.ErrClosed, and every subscription (each delivers what it had
// queued, then its channel is closed). The client is not closed. It is
// idempotent and returns nil.
func (n *Node) Close() error {
	if err := n.usable(); err != nil {
		return err
	}
	return n.rt.Close(n.release)
}

// release is Close's, once the keeper has ended: it deletes the node (see
// stop), waiting for that until ctx ends, then says the Node is closed.
func (n *Node) release(ctx context.Context) error {
	n.stop(ctx, false)
	n.mu.Lock()
	if n.keeper.stop != nil {
		n.keeper.stop()
	}
	n.keeper = keeper{}
	n.setStatusLocked(Status{Path: n.actual, Err: fmt.Errorf("%w: %w", ErrNotInPlace, zkrecipes.ErrClosed)}, conn.Session{})
	n.mu.Unlock()
	n.feed.End(nil)
	return nil
}

// stop deletes the node (unless it is a TTLNode's container), once the
// keeper has ended: what Close and a failed Start share. It deletes only
// a node that is this Node's: one it made, or may have made (a create in
// doubt, settled by looking once the create is out of the client), never
// another session's ephemeral. It waits for that until ctx ends (the
// client's release timeout), whatever the link does: the rest goes on on
// one of the client's workers, and a new Start waits for it. forget: the
// Node forgets the node's name too (a failed Start: the next makes it
// anew).
func (n *Node) stop(ctx context.Context, forget bool) {
	c := n.client
	done := make(chan struct{})
	n.mu.Lock()
	n.leaving = done
	n.mu.Unlock()
	leave := func() {
		defer close(done)
		n.leave(forget)
	}
	if !c.Go(leave) {
		// The client is closing: its session, and every ephemeral node
		// of it, goes; its Close ends a create still on its way.
		leave()
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
		c.Logger().Debug("zookeeper persistent node: delete at close goes on in the background", "path", n.path)
	}
}

// leave deletes the node if it is this Node's, once every create of its
// is out of the client (one abandoned mid-flight may still land: what it
// did is known then, as it records its outcome itself).
func (n *Node) leave(forget bool) {
	n.creates.Wait()
	n.mu.Lock()
	actual, mine, doubt, owner := n.actual, n.mine, n.doubt, n.owner
	n.owner, n.written = 0, 0
	n.mine, n.doubt = false, false
	if forget {
		n.actual = ""
	}
	n.mu.Unlock()
	if actual == "" || n.keepOnExit || (!mine && !doubt) {
		return
	}
	c := n.client
	if c.Closed() {
		return // the session and its ephemerals are gone
	}
	// Half the release timeout for the look and the delete's send, so
	// that what is left over goes to the client's background deletes
	// (which Drain waits for) well before stop stops waiting.
	ctx, cancel := context.WithTimeout(context.Background(), c.ReleaseTimeout()/2)
	defer cancel()
	if err := n.deleteOurs(ctx, actual, owner); err != nil && !errors.Is(err, zkrecipes.ErrDeferred) {
		c.Logger().Debug("zookeeper persistent node: delete at close failed", "path", actual, "err", err)
	}
}

// deleteOurs deletes the node at path if it is this Node's: for an
// ephemeral Node, one of session owner or of the current session (only
// this Node makes its name in this client); for a persistent one, a node
// that is not another session's ephemeral.
func (n *Node) deleteOurs(ctx context.Context, path string, owner int64) error {
	c := n.client
	s := c.Session()
	var ok bool
	var st *zk.Stat
	err := zkrecipes.ErrSuspended
	if c.State().IsConnected() && !closedCh(s.Suspended) {
		// Bounded by ctx: a link that died silently must not hold Close
		// up.
		ok, st, err = c.Exists(ctx, path)
	}
	switch {
	case err != nil && n.ephemeral():
		if owner == 0 {
			return err
		}
		// Checked in the background: deleted only while it is owner's.
		return c.DeleteLater(path, owner)
	case err != nil:
		// No look over this link: the background delete goes on until
		// the node is gone (a persistent node outlives the session).
		return c.DeleteLater(path, 0)
	case !ok:
		return nil
	case n.ephemeral():
		if st.EphemeralOwner == 0 || (st.EphemeralOwner != owner && st.EphemeralOwner != s.ID) {
			return nil
		}
		// Only the node of the session that made it: a node another
		// session has made at the name since is left alone.
		return c.DeleteOwned(ctx, path, st.EphemeralOwner)
	case st.EphemeralOwner != 0:
		return nil // another session's ephemeral: never ours
	}
	// DeleteLater returns at once; the delete goes on in the background,
	// which Drain and the client's Close wait for.
	return c.DeleteLater(path, 0)
}

func closedCh(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// notKeeping is the check of Set and Wait after Runtime.Check: a keeper
// at work. Not Runtime.Ready: a call made while a Start is making the
// node goes on, and waits with that Start.
func (n *Node) notKeeping() error {
	n.mu.Lock()
	keeping := n.keeping
	n.mu.Unlock()
	if !keeping {
		return n.err(zkrecipes.ErrNotStarted)
	}
	return nil
}

// wait waits until the node is in place with data of generation gen or
// later.
func (n *Node) wait(ctx context.Context, gen uint64) error {
	for {
		n.mu.Lock()
		st, written, ch := n.status, n.written, n.changed
		n.mu.Unlock()
		if n.rt.Closed() {
			return zkrecipes.ErrClosed
		}
		if st.InPlace && written >= gen {
			return nil
		}
		if errors.Is(st.Err, zkrecipes.ErrUnsupported) {
			// The servers refuse the node's kind: no wait makes it.
			return st.Err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			n.mu.Lock()
			st = n.status
			n.mu.Unlock()
			if errors.Is(st.Err, ErrOtherOwner) {
				// The one cause a caller can act on: say it, not only the
				// deadline.
				return fmt.Errorf("%w: %w", ctx.Err(), st.Err)
			}
			return ctx.Err()
		case <-n.client.Done():
			return engine.Err(zkrecipes.ErrClosed, true)
		}
	}
}

// Wait waits until the node is in place with the latest data, or ctx
// ends. It fails with zkrecipes.ErrNotStarted before Start and with
// zkrecipes.ErrClosed after Close.
func (n *Node) Wait(ctx context.Context) error {
	if err := n.usable(); err != nil {
		return err
	}
	if err := n.rt.Check(ctx); err != nil {
		return err
	}
	if err := n.notKeeping(); err != nil {
		return err
	}
	n.mu.Lock()
	gen := n.gen
	n.mu.Unlock()
	return n.err(n.wait(ctx, gen))
}

// Set makes data the node's data, now and whenever it is made again, as
// Curator's setData, and returns once it is on the node in place, or with
// ctx's error (the data is kept all the same, and written as soon as the
// node is in place again). Data too large for the node is refused before
// anything changes.
func (n *Node) Set(ctx context.Context, data []byte) error {
	if err := n.usable(); err != nil {
		return err
	}
	if err := n.rt.Check(ctx); err != nil {
		return err
	}
	if err := n.check("set", data); err != nil {
		return n.err(err)
	}
	if err := n.notKeeping(); err != nil {
		return err
	}
	n.mu.Lock()
	n.data = bytes.Clone(data)
	if n.data == nil {
		n.data = []byte{}
	}
	n.gen++
	gen := n.gen
	if n.status.InPlace {
		n.setStatusLocked(Status{Path: n.actual, Err: fmt.Errorf("%w: writing new data", ErrNotInPlace)}, n.link)
	}
	n.mu.Unlock()
	n.poke()
	return n.err(n.wait(ctx, gen))
}

func (n *Node) poke() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// Status returns where the node stands now; it sends nothing.
func (n *Node) Status() Status {
	if err := n.usable(); err != nil {
		return Status{Err: err}
	}
	n.mu.Lock()
	st, link := n.status, n.link
	n.mu.Unlock()
	return n.current(st, link)
}

// current is st, unless the link it was checked over can no longer be
// trusted under the client's error policy.
func (n *Node) current(st Status, link conn.Session) Status {
	if !st.InPlace {
		return st
	}
	// CheckTrust, as for a hold: the link's signal, and its proof of life
	// (a process thawed after a long freeze finds it stale at once).
	reason := n.client.CheckTrust(link)
	if reason == nil {
		return st
	}
	return Status{Path: st.Path, Err: fmt.Errorf("%w: %w", ErrNotInPlace, reason)}
}

// Err is nil while the node is in place (see Status.InPlace); otherwise
// it wraps ErrNotInPlace and the reason. After Close it is
// zkrecipes.ErrClosed.
func (n *Node) Err() error {
	if err := n.usable(); err != nil {
		return err
	}
	if n.rt.Closed() {
		return n.err(zkrecipes.ErrClosed)
	}
	return n.err(n.Status().Err)
}

// Subscribe returns a subscription to the node's Status from now on,
// beginning with the current one: a new value each time the node is made,
// goes, or stops being trusted (the link dropped, the session was lost).
// Its channel is closed after Close of the Node, once the values queued
// before have been taken, or at once by Close of the subscription.
func (n *Node) Subscribe() *framework.Subscription[Status] {
	if n.usable() != nil {
		var f framework.Feed[Status]
		f.End(nil)
		return f.Subscribe()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.feed.SubscribeWith(n.current(n.status, n.link))
}

// setStatusLocked records st, checked over link, and publishes it if it
// differs from the last.
func (n *Node) setStatusLocked(st Status, link conn.Session) {
	n.link = link
	if st.same(n.status) {
		return
	}
	n.status = st
	n.feed.Publish(st)
	n.wakeLocked()
}

// wakeLocked wakes every wait under way, to look again.
func (n *Node) wakeLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// notInPlace records that the node is not in place, for reason.
func (n *Node) notInPlace(reason error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.rt.Closed() {
		return
	}
	n.setStatusLocked(Status{Path: n.actual, Err: fmt.Errorf("%w: %w", ErrNotInPlace, reason)}, n.link)
}

// errAgain: reconcile changed something; look again at once.
var errAgain = errors.New("look again")

// run is the keeper: it keeps the node in place until life ends or the
// client closes. Each turn looks at the node while the link is up, then
// waits for what may call for another look.
func (n *Node) run(life context.Context, sub *framework.Subscription[conn.Event]) {
	defer sub.Close()
	<-sub.Changes() // the state as it stands: each turn below looks at it
	pacer := n.rt.Pacer()
	for life.Err() == nil {
		var watch <-chan zk.Event
		var pause <-chan time.Time
		if n.client.State().IsConnected() {
			var again bool
			if watch, pause, again = n.look(life, pacer); again {
				continue
			}
		}
		if !n.await(life, sub, watch, pause) {
			return
		}
	}
}

// look reconciles the node over the link up now, and says what to wait
// for next: the node's watch, once it is in place (or another session's
// node is); or a pause, after a failure. again: look again at once (or
// life ended).
func (n *Node) look(life context.Context, pacer *retry.Pacer) (watch <-chan zk.Event, pause <-chan time.Time, again bool) {
	ctx, cancel := context.WithCancel(life)
	defer cancel()
	link := n.client.Session()
	// A reconcile under way on a link that drops is abandoned, so that
	// the drop is reported now, not when the retries end.
	n.rt.Go(func(context.Context) {
		select {
		case <-link.Suspended:
			cancel()
		case <-ctx.Done():
		}
	})
	watch, err := n.reconcile(ctx, link)
	switch {
	case err == nil:
		pacer.Reset()
		return watch, nil, false
	case errors.Is(err, errAgain), life.Err() != nil:
		return nil, nil, true
	case ctx.Err() == nil:
		n.notInPlace(err)
		n.client.Logger().Debug("zookeeper persistent node: will try again", "path", n.path, "err", err)
	}
	// Failed, or the link dropped: the subscription says what next, or,
	// if it has said it already, a look after a pause.
	return nil, time.After(pacer.Next()), false
}

// await waits for what calls for another look: a change of the session's
// state, the node's watch, the pause's end, a Set, or life's end. It
// reports false once the client is closed.
func (n *Node) await(life context.Context, sub *framework.Subscription[conn.Event], watch <-chan zk.Event, pause <-chan time.Time) bool {
	select {
	case ev, ok := <-sub.Changes():
		return ok && n.onState(ev.State)
	case <-watch:
	case <-pause:
	case <-n.kick:
	case <-life.Done():
	}
	return true
}

// onState says what the session's new state means for the node; false:
// the client closed.
func (n *Node) onState(state conn.State) bool {
	switch state {
	case conn.StateSuspended:
		if n.client.ErrorPolicy() == framework.StandardPolicy {
			n.notInPlace(zkrecipes.ErrSuspended)
		}
	case conn.StateLost:
		n.notInPlace(zkrecipes.ErrSessionLost)
	case conn.StateClosed:
		return false
	}
	return true
}

// reconcile makes the node, or checks that it is in place with the latest
// data and sets a watch on it. It returns the watch when there is nothing
// to do until it fires, errAgain when it changed something.
func (n *Node) reconcile(ctx context.Context, link conn.Session) (<-chan zk.Event, error) {
	if err := n.createsOut(ctx); err != nil {
		return nil, err
	}
	n.mu.Lock()
	actual, data, gen, written := n.actual, n.data, n.gen, n.written
	n.mu.Unlock()
	if actual == "" {
		return nil, n.create(ctx, link, true, n.path, data, gen)
	}
	exists, st, watch, err := n.client.ExistsW(ctx, actual)
	switch {
	case err != nil:
		return nil, err
	case !exists:
		n.disown(zkrecipes.ErrNodeDeleted)
		return nil, n.create(ctx, link, false, actual, data, gen)
	case n.othersEphemeral(st, link):
		n.disown(fmt.Errorf("%w: session 0x%x", ErrOtherOwner, st.EphemeralOwner))
		return watch, nil
	}
	n.own(st)
	if written < gen {
		return nil, n.write(ctx, actual, data, gen, st.Version)
	}
	return n.inPlace(actual, gen, st, link, watch)
}

// createsOut waits until the last create sent at most once is out of the
// client: one create at a time, and a look only then, as an abandoned
// create could land after the look.
func (n *Node) createsOut(ctx context.Context) error {
	n.mu.Lock()
	inflight := n.inflight
	n.mu.Unlock()
	if inflight == nil {
		return nil
	}
	select {
	case <-inflight:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// othersEphemeral says whether the node found (st) is not this Node's
// because of its owner. An ephemeral node is this Node's only if it is of
// the current session, and only an ephemeral Node's: a persistent or
// TTL-mode Node never takes another session's ephemeral for its node.
func (n *Node) othersEphemeral(st *zk.Stat, link conn.Session) bool {
	if n.ephemeral() {
		return st.EphemeralOwner != link.ID
	}
	return st.EphemeralOwner != 0
}

// disown records that the node at the Node's name is not its own (gone,
// or another session's), for reason.
func (n *Node) disown(reason error) {
	n.mu.Lock()
	n.mine, n.doubt = false, false
	n.mu.Unlock()
	n.notInPlace(reason)
}

// own records that the node found (st) is this Node's.
func (n *Node) own(st *zk.Stat) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mine, n.doubt = true, false
	if n.ephemeral() {
		n.owner = st.EphemeralOwner
	}
}

// write puts data of generation gen on the node at actual: data set while
// the node was away, or a node found in place that this Node did not make
// with its data (Curator's setData after NodeExists). version is the one
// just checked: a node changed meanwhile is looked at again first.
func (n *Node) write(ctx context.Context, actual string, data []byte, gen uint64, version int32) error {
	_, err := n.client.Set(ctx, actual, data, version)
	switch {
	case err == nil:
		n.mu.Lock()
		n.written = max(n.written, gen)
		n.mu.Unlock()
		return errAgain
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		return errAgain
	}
	return err
}

// inPlace records the node at actual (st) in place, checked over link,
// with data of generation gen, unless a Set came meanwhile, and returns
// its watch.
func (n *Node) inPlace(actual string, gen uint64, st *zk.Stat, link conn.Session, watch <-chan zk.Event) (<-chan zk.Event, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.gen != gen {
		return nil, errAgain // Set meanwhile
	}
	owner := int64(0)
	if n.ephemeral() {
		owner = st.EphemeralOwner
	}
	// A write by someone else since (a data change) is left alone, as
	// Curator's PersistentNode only watches again: see Status.InPlace.
	n.setStatusLocked(Status{InPlace: true, Path: actual, Czxid: st.Czxid, Owner: owner}, link)
	return watch, nil
}

// create makes the node at path (first: the Node's first create, at its
// path as given) and records the outcome. It returns errAgain when there
// is something to look at, or why it failed.
//
// A protected create is the client's: after a lost reply it finds its
// node by its unique name, and one that fails or is abandoned leaves
// nothing behind (the client deletes, in the background, what it may
// still make). Any other is sent at most once (createOnce).
func (n *Node) create(ctx context.Context, link conn.Session, first bool, path string, data []byte, gen uint64) error {
	opts := n.createOptions(first)
	if !n.protected {
		return n.createOnce(ctx, link, path, data, gen, opts)
	}
	name, err := n.client.Create(ctx, path, data, opts...)
	switch {
	case err == nil:
		n.mu.Lock()
		n.actual, n.mine = name, true
		if n.ephemeral() {
			n.owner = link.ID
		}
		n.written = max(n.written, gen)
		n.mu.Unlock()
		return errAgain
	case !first && errors.Is(err, zk.ErrNodeExists):
		return errAgain // the name is ours alone: the look says whose session
	}
	return err
}

// createOnce sends a create sent at most once, on one of the client's
// workers, which lets it finish even when ctx ends (and when the Node is
// closed: it is the client's work, not the Node's): the outcome of a
// create given up on is then still learned (see leave, which waits for
// it), and a look waits for it (see createsOut).
func (n *Node) createOnce(ctx context.Context, link conn.Session, path string, data []byte, gen uint64, opts []framework.CreateOption) error {
	c := n.client
	done := make(chan struct{})
	result := make(chan error, 1)
	n.mu.Lock()
	n.inflight = done
	n.mu.Unlock()
	n.creates.Add(1)
	send := func() {
		defer n.creates.Done()
		defer close(done)
		// Not cancelled with ctx: a request is never abandoned inside the
		// client, so that its outcome is known once it returns. Sent at
		// most once, it returns once answered or once its link is gone.
		_, err := c.Create(context.WithoutCancel(ctx), path, data, opts...)
		result <- n.created(path, link.ID, gen, err)
	}
	if !c.Go(send) {
		// The client is closing: nothing is sent.
		n.creates.Done()
		close(done)
		return zkrecipes.ErrClosed
	}
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// created records the outcome err of a create at path, sent at most once
// on session: an unknown outcome leaves the node in doubt, for a look to
// settle.
func (n *Node) created(path string, session int64, gen uint64, err error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case err == nil:
		n.actual, n.mine, n.doubt = path, true, false
		if n.ephemeral() {
			n.owner = session
		}
		n.written = max(n.written, gen)
		return errAgain
	case errors.Is(err, zkrecipes.ErrOutcomeUnknown):
		n.actual, n.doubt = path, true
		if n.ephemeral() && !n.mine {
			n.owner = session
		}
		return errAgain
	case errors.Is(err, zk.ErrNodeExists):
		// The name is known: whose node it is, the look says.
		n.actual = path
		return errAgain
	}
	return err
}
