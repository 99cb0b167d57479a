package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// errClientClosed: the client the hold was made through was closed. For the
// holder that is the end of its session, whether or not the connection
// lives on for others.
var errClientClosed = fmt.Errorf("%w: its client was closed", zkrecipes.ErrSessionLost)

// RevokeMessage is Curator's RevocationSpec.REVOKE_MESSAGE: the data another
// process writes to a holder's node to ask it to release.
const RevokeMessage = "__REVOKE__"

// Node is one granted node, followed: its fencing token and the signal that
// it can no longer be trusted, shared by every acquisition (hold.Hold) of
// it; it is the hold.Source of those holds. The recipe that granted it
// releases it once, when its last Hold is released (or Forgets it, to keep
// managing the node itself). Its methods are safe for concurrent use. Make
// one with Follow.
type Node struct {
	client    *framework.Client
	revocable bool
	path      string
	token     int64
	session   conn.Session
	// The recipe its errors name (WithRecipe), and the recipe's path.
	recipe, recipePath string

	done    chan struct{}
	revoked chan struct{} // nil unless revocable: never closes

	// The session's loss signal under the client's error policy, and
	// Grant.Changed: what the watchers follow (see watch).
	signal  <-chan struct{}
	changed <-chan zk.Event
	// The watchers' context, made when they start (under mu) and
	// cancelled by halt; nil until then.
	life   context.Context
	cancel context.CancelFunc
	// watching: the watchers have started, or never will (halt ran, or
	// the node ended first): watch is one load from then on. Set under mu,
	// so that no watcher starts after halt.
	watching atomic.Bool
	// settled: the node is known as a follower from its grant would know
	// it (the directory's change had not fired when the watchers started,
	// or a read found the node ours): Confirm need not read it.
	settled atomic.Bool
	unwatch func() // leaves the shared Watcher, if one follows the node
	wg      sync.WaitGroup

	unhook func() // unregisters from the client's Close

	meter *framework.RecipeMeter // the recipe's instruments (nil: none)
	// metered: counted as held (at its first Hold handed out, under mu):
	// its end is counted too. A node never handed out is neither.
	metered bool

	mu    sync.Mutex
	err   error
	ended atomic.Bool // err is set: read without mu by vouch
	// The open acquisitions of this node, each with what ends it (see
	// hold.Source.Attach); most nodes have one, kept in one (no
	// allocation for it).
	holds       []attached
	one         [1]attached
	releaseOnce sync.Once
	releaseErr  error

	// The lease (Lease): zero deadline = none. releasing is set once
	// Release or the client's Close took the node over, expired once the
	// lease's end took it: whichever comes first deletes the node.
	deadline  time.Time
	timer     *time.Timer
	releasing bool
	expired   bool
	given     bool   // a Hold of it was handed out
	onExpire  func() // the recipe's bookkeeping at the lease's end
}

// attached is an open acquisition of a Node, and what ends it.
type attached struct {
	h   *hold.Hold
	end func(*hold.Hold, error)
}

// Grant is an ephemeral node a recipe was granted: what Follow follows.
type Grant struct {
	// Path is the node, without the client's namespace.
	Path string
	// Token is the node's czxid: the fencing token of its holds.
	Token int64
	// Session is the session the grant is trusted under (as the client's
	// Session was when the grant was decided): it owns Path, and its
	// channels say when that trust ends.
	Session conn.Session
	// Changed, if not nil, is a child watch on Path's directory, set after
	// Path was made and not fired by the grant (framework.Queued.Changed):
	// until it fires, Path has not been deleted, so the Node need not watch
	// Path itself yet, which saves an uncontended hold a request.
	Changed <-chan zk.Event
}

// Option configures Follow.
type Option interface{ applyNode(*nodeConfig) }

type nodeConfig struct {
	revocable  bool
	kind       string
	path       string
	recipe     string
	recipePath string
	watcher    *Watcher
}

type nodeOption func(*nodeConfig)

func (f nodeOption) applyNode(c *nodeConfig) { f(c) }

// WithRevocable makes the Node follow Curator's revocation requests on its
// node (its data becoming RevokeMessage): hold.Hold.Revoked closes.
func WithRevocable() Option { return nodeOption(func(c *nodeConfig) { c.revocable = true }) }

// WithMetrics counts the Node's holds in the recipes' instruments (see
// framework.WithMeterProvider) as a hold of recipe kind ("mutex", or your
// recipe's name) on recipePath, the path the recipe was made with.
func WithMetrics(kind, recipePath string) Option {
	return nodeOption(func(c *nodeConfig) { c.kind, c.path = kind, recipePath })
}

// WithRecipe names the recipe the Node's holds belong to: the errors of
// the Node and of its holds name the recipe and its path as the recipe's
// own errors do ("mutex /locks/a: released", a *framework.RecipeError),
// recipePath being the path the recipe was made with.
func WithRecipe(recipe, recipePath string) Option {
	return nodeOption(func(c *nodeConfig) { c.recipe, c.recipePath = recipe, recipePath })
}

// Follow starts following g, a node granted to a recipe on client: the
// session's loss signal under the client's error policy, and the node
// itself (deleted or re-owned means lost; WithRevocable, also Curator's
// revocation requests), from the first look at its end (Done, Err, a
// Hold's Done, Err or Context; see watch): a node nobody waits on follows
// nothing while held, and reads its loss signal when it is looked at or
// released. Its acquisitions are holds (NewHold); Release
// deletes it. If the loss signal has already fired, the Node is born lost
// (see Err), and NewHold refuses it: a recipe never hands out a hold whose
// signal has fired. This is how every recipe of this module turns a
// granted node into holds, and a recipe of your own may do the same.
func Follow(client *framework.Client, g Grant, opts ...Option) *Node {
	var cfg nodeConfig
	for _, o := range opts {
		if o != nil {
			o.applyNode(&cfg)
		}
	}
	var meter *framework.RecipeMeter
	if cfg.kind != "" {
		meter = client.RecipeMeter(cfg.kind, cfg.path)
	}
	return follow(client, g, cfg, meter)
}

// named names the Node's recipe in err (WithRecipe).
func (n *Node) named(err error) error {
	if err == nil || n.recipe == "" {
		return err
	}
	return framework.RecipeErr(n.recipe, n.recipePath, err)
}

// follow is Follow with the recipe's instruments made already.
func follow(client *framework.Client, g Grant, cfg nodeConfig, meter *framework.RecipeMeter) *Node {
	n := &Node{
		client:    client,
		revocable: cfg.revocable,
		recipe:    cfg.recipe, recipePath: cfg.recipePath,
		path:    g.Path,
		token:   g.Token,
		session: g.Session,
		done:    make(chan struct{}),
		meter:   meter,
		signal:  client.LossSignal(g.Session),
		changed: g.Changed,
	}
	n.holds = n.one[:0]
	if cfg.revocable {
		n.revoked = make(chan struct{}) // else nil: never closes
		n.changed = nil                 // a revocation request changes data only: watch it now
	}
	if isClosed(n.signal) {
		n.finish(n.lossCause()) // never handed out: neither counted nor logged
	}
	// The client's Close ends the node before it deletes anything, and
	// ends its watchers: a client over a shared connection does not end
	// the session, so the loss signal would not.
	n.unhook = client.OnClose(func() {
		n.heed() // a loss signal that fired unwatched came first
		n.endLease()
		n.finish(errClientClosed)
		n.halt()
	})
	if w := cfg.watcher; w != nil && w.client == client {
		shared := &watched{n: n, signal: n.signal}
		n.life, n.cancel = context.WithCancel(framework.HandOff(context.Background()))
		n.unwatch = func() { w.remove(shared) }
		n.watching.Store(true)
		w.add(shared) // no goroutine of its own
		return n
	}
	if cfg.revocable {
		n.watch() // a revocation request must close Revoked unasked
	}
	return n
}

// Token is the fencing token: the czxid of the node.
func (n *Node) Token() int64 { return n.token }

// Path is the node.
func (n *Node) Path() string { return n.path }

// SessionID is the session that owns the node.
func (n *Node) SessionID() int64 { return n.session.ID }

// Err is nil while the node is trusted, then says why it is not. Asking
// is waiting: the node is followed from then on (see Done).
func (n *Node) Err() error { return n.named(n.errNow()) }

// endReleased ends the node as released and returns what ended it first,
// if anything did, decided under one lock: a loss told after Release made
// its verdict (a shared Watcher's event is not waited for as a Node's own
// watchers are) finds the node ended already, so Release's answer and the
// node's recorded end never disagree.
func (n *Node) endReleased() error {
	n.vouch()
	n.mu.Lock()
	lost := n.told(n.err)
	first := n.endLocked(zkrecipes.ErrReleased)
	n.mu.Unlock()
	if first {
		n.report(zkrecipes.ErrReleased)
	}
	return lost
}

func (n *Node) errNow() error {
	n.watch()
	n.vouch()
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.told(n.err)
}

// vouch ends the node if its client can no longer vouch for the link it
// was granted on (framework.Client.CheckTrust): a process thawed after a
// freeze longer than the loss signal's bound must not find its holds
// trusted in the moment before its connection's reader notices the link
// is dead. It runs before anything of the node is handed out or its error
// read.
func (n *Node) vouch() {
	if n.ended.Load() {
		return // the first reason stands
	}
	n.heed()
	err := n.client.CheckTrust(n.session)
	if err == nil {
		return
	}
	if errors.Is(err, zkrecipes.ErrClosed) {
		err = errClientClosed
	}
	n.finish(err)
}

// errSuspendedThenLost: a hold that ended with its link in doubt, whose
// session the client has since found lost.
var errSuspendedThenLost = fmt.Errorf("%w, then %w", zkrecipes.ErrSuspended, zkrecipes.ErrSessionLost)

// told is err as it should be told now: the first reason a hold ended never
// changes, but a hold that ended in doubt (zkrecipes.ErrSuspended) says so too once
// its session is known lost, so that errors.Is(err, zkrecipes.ErrSessionLost) holds
// for what is lost for good.
func (n *Node) told(err error) error {
	if err == nil || !isClosed(n.session.Lost) || errors.Is(err, zkrecipes.ErrSessionLost) {
		return err
	}
	if err == zkrecipes.ErrSuspended {
		return errSuspendedThenLost
	}
	if errors.Is(err, zkrecipes.ErrSuspended) {
		// Ended in doubt with the detail of why (CheckTrust's).
		return fmt.Errorf("%w, then %w", err, zkrecipes.ErrSessionLost)
	}
	return err
}

// Done is closed when the node can no longer be trusted, or is released.
// The node is followed from the first call (or Err's, or a Hold's Done,
// Err or Context) on: a node nobody waits on costs nothing while held,
// and learns of a loss when it is next looked at or released.
func (n *Node) Done() <-chan struct{} {
	n.watch()
	return n.done
}

// Watch is hold.Source's: a holder waits on the node's end (a Hold's Done
// or Context), so the node is followed from now on (see Done).
func (n *Node) Watch() { n.watch() }

func (n *Node) lossCause() error {
	if isClosed(n.session.Lost) {
		return zkrecipes.ErrSessionLost
	}
	return zkrecipes.ErrSuspended
}

// finish marks the node untrusted with err (the first reason wins) and
// fires every open Hold's signal.
func (n *Node) finish(err error) {
	n.mu.Lock()
	first := n.endLocked(err)
	n.mu.Unlock()
	if first {
		n.report(err)
	}
}

// endLocked is finish's part under n.mu; it reports whether err is the
// reason (the first).
func (n *Node) endLocked(err error) bool {
	if n.err != nil {
		return false
	}
	n.err = err
	n.ended.Store(true)
	close(n.done)
	for _, a := range n.holds {
		a.end(a.h, err)
	}
	return true
}

// report counts and logs the end of the node, for err.
func (n *Node) report(err error) {
	if !n.metered {
		return
	}
	reason, lost := lossReason(err)
	n.meter.HoldEnded(lost, reason)
	if lost {
		n.client.Logger().Warn("zookeeper hold lost", "path", n.path, "session", sessionHex(n.session.ID),
			"token", n.token, "reason", reason.String(), "err", err)
	} else if log := n.client.Logger(); log.Enabled(context.Background(), slog.LevelDebug) {
		// Guarded: a release is the hot path, and the arguments allocate.
		log.Debug("zookeeper hold ended", "path", n.path, "session", sessionHex(n.session.ID),
			"token", n.token, "reason", Reason(err))
	}
}

// lossReason is the metrics' reason for a node that ended with err, and
// whether that is a loss at all (a release or a recipe's Close is not).
func lossReason(err error) (framework.LossReason, bool) {
	switch {
	case errors.Is(err, errClientClosed):
		return framework.LostClientClosed, true
	case errors.Is(err, zkrecipes.ErrSuspended):
		return framework.LostSuspended, true
	case errors.Is(err, zkrecipes.ErrSessionLost):
		return framework.LostSession, true
	case errors.Is(err, zkrecipes.ErrNodeDeleted):
		return framework.LostNodeDeleted, true
	case errors.Is(err, zkrecipes.ErrLeaseExpired):
		return framework.LostLeaseExpired, true
	}
	return 0, false
}

// Reason names why a hold ended, for a log line's "reason": the metrics'
// loss reasons (suspended, session_lost, node_deleted, closed,
// lease_expired), or
// released, or (a recipe's own Close) recipe_closed.
func Reason(err error) string {
	if r, lost := lossReason(err); lost {
		return r.String()
	}
	switch {
	case errors.Is(err, zkrecipes.ErrReleased):
		return "released"
	case errors.Is(err, zkrecipes.ErrClosed):
		return "recipe_closed"
	}
	return "error"
}

// sessionHex is how every log line writes a session id (attribute
// "session").
func sessionHex(id int64) string { return fmt.Sprintf("0x%x", id) }

// Forget stops following the node without deleting it, for a recipe that
// keeps managing the node itself (a leader latch may lead again with it).
// Err becomes reason if it was nil (a nil reason says
// zkrecipes.ErrReleased).
func (n *Node) Forget(reason error) {
	if reason == nil {
		reason = zkrecipes.ErrReleased // a node ends with a reason
	}
	n.releaseOnce.Do(func() {
		n.endLease()
		n.finish(reason)
		n.unhook()
		n.halt()
		n.wg.Wait()
	})
}

// Release stops following the node and deletes it: at once (sent, not
// answered) while it is trusted, else in the background (the node may
// belong to a session being replaced), returning an error wrapping
// zkrecipes.ErrHoldLost. It runs once; later calls return the first result.
func (n *Node) Release() error {
	n.releaseOnce.Do(func() { n.releaseErr = n.named(n.release()) })
	return n.releaseErr
}

func (n *Node) release() error {
	expired := n.endLease() // first: a lease's end from now on is no loss
	n.unhook()
	n.halt()
	n.wg.Wait()
	lost := n.endReleased()
	// The delete only has to be on its way: ZooKeeper applies it before
	// anything this client sends next (a new acquire queues behind it), and
	// the next contender is woken by the delete itself, not by our waiting.
	// A lost hold's node may belong to a session being replaced: Leave
	// then deletes it in the background, only while it is still ours.
	var err error
	if expired {
		// The lease's end queued the delete already (expire).
	} else if errors.Is(lost, zkrecipes.ErrNodeDeleted) {
		// Gone, or not the node we were granted: a blind delete sent to
		// its path would take a node someone else has made there since.
		// The background delete checks the owner first, so it leaves
		// another's node alone, and still removes ours should the belief
		// that it is gone ever be wrong.
		if derr := n.client.Delete(context.Background(), n.path, -1, framework.OwnedBy(n.session.ID), framework.Deferred()); derr != nil && !errors.Is(derr, zkrecipes.ErrClosed) {
			err = derr
		}
	} else {
		err = Leave(n.client, n.path, n.session.ID)
	}
	if lost != nil {
		err = errors.Join(fmt.Errorf("%w: %w", zkrecipes.ErrHoldLost, lost), err)
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", n.path, err)
	}
	return nil
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
