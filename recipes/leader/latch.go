package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/hold"
)

// latchName is Curator's LeaderLatch node name.
const latchName = "latch-"

// Latch is Curator's LeaderLatch: participants queue as
// path/_c_<uuid>-latch-<seq> (data: the participant id) and the first one
// leads. It leads only while its node is first AND owned by its current
// session (CURATOR-696), and gives leadership up the moment the session is in
// doubt: on Suspended under the standard error policy (it is re-checked on
// Reconnected), on Lost under either.
type Latch struct {
	client *framework.Client
	path   string
	id     string
	meter  *framework.RecipeMeter
	feed   framework.Feed[Change]
	rt     *framework.Runtime
	// starting counts the Starts under way, which an Await waits for.
	starting atomic.Int32

	mu       sync.Mutex
	term     *hold.Hold
	changed  chan struct{} // closed and replaced on every change
	closeErr error         // the run's last delete of its node
}

// NewLatch returns a latch on path. It sends nothing: Start joins the
// election.
func NewLatch(client *framework.Client, path string, opts ...LatchOption) (*Latch, error) {
	if client == nil {
		return nil, framework.RecipeErr(latchRecipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(latchRecipe, path, err)
	}
	cfg, err := framework.Configure(latchRecipe, path, config{}, opts, LatchOption.applyLatch)
	if err != nil {
		return nil, err
	}
	id := cfg.ParticipantID()
	if err := engine.CheckData(client, path, []byte(id), latchName); err != nil {
		return nil, framework.RecipeErr(latchRecipe, path, err)
	}
	return &Latch{client: client, path: path, id: id, rt: framework.NewRuntime(client, latchRecipe, path),
		meter:   client.RecipeMeter(latchKind, path),
		changed: make(chan struct{})}, nil
}

// Path returns the latch's path.
func (l *Latch) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// ID returns the participant id.
func (l *Latch) ID() string {
	if l == nil {
		return ""
	}
	return l.id
}

// Start joins the election: it returns once this participant's node is in
// the queue, and the latch then follows the election in the background
// until Close (queueing again after a lost session). Leadership is reported
// by Held, Await and Subscribe. If the node cannot be queued (the server
// refuses it: no permission, say), Start returns why; if ctx ends first,
// its error. Either way it leaves nothing behind and may be called again.
// A second Start after one that succeeded returns zkrecipes.ErrStarted.
func (l *Latch) Start(ctx context.Context) error {
	if err := l.usable(); err != nil {
		return err
	}
	// A run that Start gives up on ends with the runtime's halt, and
	// deletes whatever it had made before Start returns.
	l.starting.Add(1)
	err := l.rt.Start(ctx, func(ctx context.Context) error {
		return join(ctx, l.rt, l.run)
	})
	l.starting.Add(-1)
	if err != nil {
		// An Await that waited for this Start learns it failed.
		l.mu.Lock()
		l.broadcastLocked()
		l.mu.Unlock()
	}
	return err
}

// Held returns the current term of leadership, if this participant leads
// now. Its Release steps down; its Err says why it ended.
func (l *Latch) Held() (*hold.Hold, bool) {
	if l.usable() != nil {
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.currentLocked()
	return t, t != nil
}

// currentLocked is the term, unless it has ended: its signal fires at once,
// before run has caught up, and an ended term is never handed out.
func (l *Latch) currentLocked() *hold.Hold {
	if l.term == nil || l.term.Err() != nil {
		return nil
	}
	return l.term
}

// Await blocks until this participant leads, ctx ends or the latch closes,
// and returns the term. Before Start (or after a Start that failed) it
// fails at once with zkrecipes.ErrNotStarted: nothing would come; during
// a Start it waits for it.
func (l *Latch) Await(ctx context.Context) (*hold.Hold, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, l.err(zkrecipes.ErrNilContext)
	}
	for {
		l.mu.Lock()
		term, changed := l.currentLocked(), l.changed
		l.mu.Unlock()
		if term != nil {
			return term, nil
		}
		// Closed, or not started: nothing would ever come; say so now,
		// not when ctx ends. A Start under way may yet succeed: wait for
		// it. Start counts itself out only after it has succeeded or
		// failed, so a count of none means Ready now tells which.
		if err := l.rt.Ready(ctx); err != nil {
			if !errors.Is(err, zkrecipes.ErrNotStarted) {
				return nil, err
			}
			if l.starting.Load() == 0 {
				if err := l.rt.Ready(ctx); err != nil {
					return nil, err
				}
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, l.err(ctx.Err())
		}
	}
}

// Subscribe returns a subscription to this participant's leadership: first
// where it stands (a Change with Leader set, the term's Token and its
// Granted time while it leads, else one with Leader false, Reason nil and
// Token 0), then every change, in order: a slow reader never blocks the
// election, and one that falls more than framework.DefaultBound changes
// behind is told (the subscription ends with zkrecipes.ErrFellBehind),
// never skipped silently; see docs/vocabulary.md. When the latch closes,
// it delivers what is still queued, then ends.
func (l *Latch) Subscribe() *framework.Subscription[Change] {
	if l.usable() != nil {
		var ended framework.Feed[Change]
		ended.End(nil)
		return ended.Subscribe()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := Change{Time: time.Now()}
	if t := l.currentLocked(); t != nil {
		now.Leader, now.Token, now.Time = true, t.Token(), t.Granted()
	}
	return l.feed.SubscribeWith(now)
}

// Participants returns the ids of the participants in queue order, the
// leader first.
func (l *Latch) Participants(ctx context.Context) ([]string, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, l.err(zkrecipes.ErrNilContext)
	}
	ids, err := participants(ctx, l.client, l.path, latchName)
	return ids, l.err(err)
}

// Close leaves the election: a current term ends (its Err is
// zkrecipes.ErrClosed, and subscribers get that change), the node is
// deleted (the next participant leads within a few round trips) and every
// goroutine ends. It is idempotent, waits for the delete to be sent at
// most framework.WithReleaseTimeout (or leaves it to the client's
// background deleter), and does not close the client.
func (l *Latch) Close() error {
	if err := l.usable(); err != nil {
		return err
	}
	// The run has deleted its node by the time release runs.
	return l.rt.Close(func(context.Context) error {
		l.mu.Lock()
		l.broadcastLocked()
		err := l.closeErr
		l.mu.Unlock()
		l.feed.End(nil)
		return err
	})
}

// usable says why l cannot be used: it is nil or a zero Latch.
func (l *Latch) usable() error {
	if l == nil || l.rt == nil {
		return framework.Invalid(latchRecipe, "Latch", "NewLatch")
	}
	return nil
}

// err names the latch and its path in err.
func (l *Latch) err(err error) error { return l.rt.Err(err) }

// run competes until life ends: queue (telling queued), lead while
// trusted, and after a loss either lead again (same node, still first,
// same session) or queue anew.
func (l *Latch) run(life context.Context, j *joining) {
	c := l.client
	var node string
	var owner, czxid int64
	defer func() {
		var err error
		if node != "" {
			err = l.deleteNode(node, owner)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.closeErr = err
		// An Await waiting for a term that will not come looks again.
		l.broadcastLocked()
	}()
	pacer := l.rt.Pacer()
	for life.Err() == nil {
		// From here to a term is the latch's acquire, whether it queues
		// anew or its node leads again after a cut.
		start := time.Now()
		var e *engine.Grant
		var err error
		if node != "" {
			e, err = l.recheck(life, node, owner, czxid)
		}
		if e == nil && err == nil {
			if node != "" {
				// Gone or not ours: only a check of its owner may delete
				// it, never a blind delete that could take a node someone
				// else has made at the path since.
				_ = c.Delete(life, node, -1, framework.OwnedBy(owner), framework.Deferred())
				node = ""
			}
			e, err = engine.Enter(life, engine.Request{Client: c, Dir: l.path, Name: latchName, Data: []byte(l.id), Driver: engine.First(1), Queued: j.queue})
		}
		if err != nil {
			l.meter.Acquire(life, start, err)
			if life.Err() != nil {
				return
			}
			if j.fail(err) {
				return // Start returns it
			}
			c.Logger().Warn("leader latch: will try again", "path", l.path, "err", err)
			if !pacer.Wait(life) {
				return
			}
			continue
		}
		pacer.Reset()
		node, owner, czxid = e.Path, e.Session.ID, e.Token
		if l.lead(life, *e, start) {
			node = "" // stepped down: its node is deleted
		}
	}
}

// lead hands out the term of grant g, a hold of its node, and waits for
// the term to end: lost (the node stays, to lead again if it still may),
// released (it steps down: the node is deleted, and lead reports true) or
// the latch closing.
func (l *Latch) lead(life context.Context, g engine.Grant, start time.Time) (steppedDown bool) {
	// The term is a hold of the node, as every hold: it follows the
	// session's loss signal and the node itself (deleted by someone else,
	// the term is over at once). Its Release steps down.
	followed := engine.Follow(l.client, g, engine.WithMetrics(latchKind, l.path), engine.WithRecipe(latchRecipe, l.path))
	stepDown, over := make(chan struct{}), make(chan struct{})
	defer close(over)
	var once sync.Once
	term, err := followed.NewHold(func(*hold.Hold) error {
		once.Do(func() { close(stepDown) })
		<-over
		return nil
	})
	l.meter.Acquire(life, start, err)
	if err != nil {
		// Lost between the grant and now: never hand it out.
		followed.Forget(followed.Err())
		return false
	}
	l.setTerm(term)
	select {
	case <-followed.Done():
		select {
		case <-stepDown:
			// Released as it was lost: the holder stepped down, and a
			// term given back never leads again from the same node,
			// whichever of the two the select saw first.
			l.stepDown(followed, g)
			return true
		default:
		}
		reason := followed.Err()
		followed.Forget(reason)
		l.endTerm(reason)
	case <-stepDown:
		l.stepDown(followed, g)
		return true
	case <-life.Done():
		followed.Forget(zkrecipes.ErrClosed)
		l.endTerm(zkrecipes.ErrClosed)
	}
	return false
}

// stepDown ends a term its holder released: it leaves the lead to the
// next participant and queues again at the back, its node deleted.
func (l *Latch) stepDown(followed *engine.Node, g engine.Grant) {
	followed.Forget(zkrecipes.ErrReleased)
	l.endTerm(zkrecipes.ErrReleased)
	if err := l.deleteNode(g.Path, g.Session.ID); err != nil {
		l.client.Logger().Warn("leader latch: stepping down", "path", l.path, "err", err)
	}
}

// recheck decides after a loss whether our node still leads: it must exist,
// be first, and belong to a session Trust vouches for. It waits for a
// connection first. Trust comes last, as at every grant, so that a link that
// drops during the look is waited out and the node checked again. A nil
// entry and nil error mean "queue anew".
func (l *Latch) recheck(life context.Context, node string, owner, czxid int64) (*engine.Grant, error) {
	c := l.client
	if _, err := c.WaitConnected(life); err != nil {
		return nil, err
	}
	nodes, err := engine.Nodes(life, c, l.path, latchName)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 || nodes[0] != node {
		return nil, nil
	}
	s, err := engine.Trust(life, c, owner, node)
	if errors.Is(err, zkrecipes.ErrSessionLost) {
		return nil, nil // the node is gone or not ours: queue anew
	}
	if err != nil {
		return nil, err
	}
	return &engine.Grant{Path: node, Token: czxid, Session: s}, nil
}

func (l *Latch) deleteNode(node string, owner int64) error {
	if err := engine.Leave(l.client, node, owner); err != nil {
		return fmt.Errorf("leave %s: %w", node, err)
	}
	return nil
}

func (l *Latch) setTerm(t *hold.Hold) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.term = t
	l.meter.Leading(true)
	l.client.Logger().Info("leader latch: leading", "path", l.path, "session", fmt.Sprintf("0x%x", t.SessionID()), "token", t.Token())
	l.broadcastLocked()
	l.publishLocked(Change{Leader: true, Token: t.Token(), Time: time.Now()})
}

// endTerm reports the end of the current term to subscribers.
func (l *Latch) endTerm(reason error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.term
	if t == nil {
		return
	}
	l.term = nil
	l.meter.Leading(false)
	l.client.Logger().Info("leader latch: not leading", "path", l.path, "session", fmt.Sprintf("0x%x", t.SessionID()),
		"token", t.Token(), "reason", engine.Reason(reason))
	l.broadcastLocked()
	l.publishLocked(Change{Leader: false, Reason: reason, Token: t.Token(), Time: time.Now()})
}

func (l *Latch) broadcastLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Latch) publishLocked(ch Change) { l.feed.Publish(ch) }
