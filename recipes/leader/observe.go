package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
)

// Leadership is who leads a latch or selector path: one state of the
// stream of Observe. The zero value is "nobody leads".
type Leadership struct {
	// ID is the leader's participant id, the data of its node as it was
	// when the observer first saw that node lead.
	ID string
	// Node is the leader's node, without the client's namespace; "" when
	// nobody leads.
	Node string
	// Token is the fencing token of the leader's term, the czxid of its
	// node (0 when nobody leads): it grows from each term to the next.
	Token int64
	// Since is the best estimate of when this state began. For a leader
	// already leading when the observer first looks, it is its node's
	// creation time (ZooKeeper's ctime: the earliest it can have led); for
	// a change the observer sees, the time it learnt of it (a watch fired,
	// or its link went down before it looked again), never before the
	// node's ctime. Zero when the first look finds nobody leading.
	Since time.Time
	// Stale is nil while this state is known current. When the
	// observer's link drops (it cannot look), the last state comes again
	// with Stale set, wrapping zkrecipes.ErrStale and why; once it has
	// looked again, the state it found comes with Stale nil, even if the
	// leader is the same: Curator's stateChanged.
	Stale error
}

// HasLeader reports whether somebody leads.
func (l Leadership) HasLeader() bool { return l.Node != "" }

// sameTerm compares by node and token: an id says nothing (a participant
// that leaves and queues again is a new term under the same id).
func (l Leadership) sameTerm(o Leadership) bool { return l.Node == o.Node && l.Token == o.Token }

// Observer is the stream of leadership changes of one path, from Observe:
// a framework.Feed's subscription, under the module's one rule for every
// subscription (docs/vocabulary.md). Read Changes until it is closed, then
// Err says why it ended.
type Observer struct {
	path string
	feed framework.Feed[Leadership] // its one subscriber is sub
	sub  *framework.Subscription[Leadership]
	stop context.CancelCauseFunc
	done chan struct{} // closed when its goroutine has ended
}

// Changes returns the stream. The first value is the state when Observe
// first looks; every later one differs from the one before it in the
// leader's node or token, or in whether it may be stale (Stale). Every
// change is queued for the reader, in order, and the observer never waits
// for it; a reader that falls more than framework.DefaultBound changes
// behind is told: the channel closes and Err wraps zkrecipes.ErrFellBehind
// (observe again: the state as it stands comes first). It is closed when
// the stream ends, once the reader has taken what came before.
func (o *Observer) Changes() <-chan Leadership { return o.sub.Changes() }

// Err returns why the stream ended, once Changes is closed (nil before):
// the context's error when the context ended, zkrecipes.ErrClosed when the
// client closed, zkrecipes.ErrFellBehind when the reader fell behind, or a
// ZooKeeper error that looking again cannot cure (zk.ErrNoAuth: the client
// may not read the path).
func (o *Observer) Err() error {
	err := o.sub.Err()
	if errors.Is(err, zkrecipes.ErrFellBehind) {
		return framework.RecipeErr(observeRecipe, o.path, err)
	}
	return err
}

// Close ends the stream at once (Changes closes, what was queued is
// dropped; Err then says nothing more: the reader ended it) and waits for
// its goroutines. A reader that stops reading before the stream ends must
// call it. It is idempotent.
func (o *Observer) Close() {
	o.stop(errObserverClosed)
	o.sub.Close()
	<-o.done
}

// errObserverClosed is the cause of a stream ended by its Close.
var errObserverClosed = errors.New("observer closed")

// Observe reports who leads path, a latch or selector path of this package
// or of Curator's LeaderLatch or LeaderSelector (or any Curator lock
// path: the leader is the lock holder), and then every change, until ctx
// ends or the client closes. The leader is the first node in queue order,
// as Participants sees it.
//
// It keeps one watch at a time (on the leader's node, or on the path while
// nobody leads) and never polls. While the client's link is down the
// stream is silent; once it is back, on the same session or (after an
// expiry) a new one, the observer looks again and reports a change only if
// the leader's node or token differs from the last one reported: no change
// is missed and none is reported twice. A term shorter than one look (a
// round trip) may pass unseen: the stream reports states, and always
// catches up with the current one.
//
// One goroutine serves the stream; it ends when ctx ends, the client
// closes, the reader falls behind or Close is called, whether or not
// anyone reads; the channel closes once the reader has taken what came
// before (see Changes). A nil client or context is zkrecipes.ErrInvalidArgument, a bad
// path zkrecipes.ErrInvalidPath and a closed client zkrecipes.ErrClosed.
func Observe(ctx context.Context, client *framework.Client, path string) (*Observer, error) {
	if err := engine.CheckCall(client, ctx); err != nil {
		return nil, framework.RecipeErr(observeRecipe, path, err)
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(observeRecipe, path, err)
	}
	if client.Closed() {
		return nil, framework.RecipeErr(observeRecipe, path, zkrecipes.ErrClosed)
	}
	life, stop := context.WithCancelCause(ctx)
	remove := client.OnClose(func() { stop(zkrecipes.ErrClosed) })
	o := &Observer{path: path, stop: stop, done: make(chan struct{})}
	o.sub = o.feed.Subscribe()
	serve := func() {
		defer close(o.done)
		defer remove()
		err := o.run(life, client, path)
		cause := context.Cause(life)
		stop(nil)
		switch {
		case errors.Is(cause, errObserverClosed):
			err = nil
		case ctx.Err() != nil:
			err = framework.RecipeErr(observeRecipe, path, ctx.Err())
		case errors.Is(cause, zkrecipes.ErrClosed) || errors.Is(err, zkrecipes.ErrClosed):
			err = framework.RecipeErr(observeRecipe, path, engine.Err(zkrecipes.ErrClosed, false))
		default:
			err = framework.RecipeErr(observeRecipe, path, err)
		}
		o.feed.End(err)
	}
	if !client.Go(serve) {
		remove()
		stop(nil)
		o.sub.Close()
		return nil, framework.RecipeErr(observeRecipe, path, zkrecipes.ErrClosed)
	}
	return o, nil
}

// run looks, reports and waits for the next reason to look, until life
// ends or an error that looking again cannot cure.
func (o *Observer) run(life context.Context, c *framework.Client, path string) error {
	var last Leadership
	reported := false
	var woke time.Time // when the last wait ended; zero before the first look
	pacer := c.RetryPolicy().Pacer()
	for {
		s, err := c.WaitConnected(life)
		if err != nil {
			return err
		}
		lookCtx, endLook := context.WithCancel(life)
		now, watch, err := look(lookCtx, c, path)
		if err != nil {
			endLook()
			if life.Err() != nil || permanent(err) {
				return err
			}
			c.Logger().Warn("leader observer: will look again", "path", path, "err", err)
			if !pacer.Wait(life) {
				return life.Err()
			}
			continue
		}
		pacer.Reset()
		tell := true
		switch {
		case !reported || !now.sameTerm(last):
			// Seen happening: no earlier than when the observer woke.
			if !now.HasLeader() || now.Since.Before(woke) {
				now.Since = woke
			}
		case last.Stale != nil:
			now = last // the same term, current again
			now.Stale = nil
		default:
			tell = false // what it said last
		}
		if tell {
			if err := o.send(now); err != nil {
				endLook()
				return err
			}
			last, reported = now, true
		}
		last, err = o.wait(life, watch, s.Suspended, last)
		endLook()
		if err != nil {
			return err
		}
		woke = time.Now()
	}
}

// wait waits for a reason to look again: a watch event of any kind (the
// node went, the path changed, the watch ended with the session or the
// client), or the link going down, after which what it said last may be
// stale until it has looked again: it tells the reader so, and returns
// what it told. Its error ends the stream: life ended, or the reader fell
// behind.
func (o *Observer) wait(life context.Context, watch <-chan zk.Event, suspended <-chan struct{}, last Leadership) (Leadership, error) {
	select {
	case <-watch:
	case <-suspended:
		stale := last
		stale.Stale = fmt.Errorf("%w: %w", zkrecipes.ErrStale, zkrecipes.ErrSuspended)
		if err := o.send(stale); err != nil {
			return last, err
		}
		return stale, nil
	case <-life.Done():
		return last, life.Err()
	}
	return last, nil
}

// send queues l for the reader. Its error says the reader fell behind, and
// was told: nobody is left to report to.
func (o *Observer) send(l Leadership) error {
	o.feed.Publish(l)
	if err := o.sub.Err(); errors.Is(err, zkrecipes.ErrFellBehind) {
		return err
	}
	return nil
}

// look reads who leads path and sets one watch that fires when that may
// change: on the leader's node, else on the path's children, else (no
// path) on the path's creation. The watch lives as long as ctx.
func look(ctx context.Context, c *framework.Client, path string) (Leadership, <-chan zk.Event, error) {
	for {
		nodes, err := engine.Nodes(ctx, c, path, latchName, "lock-")
		if err != nil {
			return Leadership{}, nil, err
		}
		if len(nodes) == 0 {
			kids, _, watch, err := c.ChildrenW(ctx, path)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				exists, _, watch, err := c.ExistsW(ctx, path)
				if err != nil || !exists {
					return Leadership{}, watch, err
				}
				continue // made since: look again
			case err != nil:
				return Leadership{}, nil, err
			case len(kids) == 0:
				return Leadership{}, watch, nil
			}
			continue // somebody queued since: look again
		}
		data, st, watch, err := c.GetW(ctx, nodes[0])
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone since: look again
		}
		if err != nil {
			return Leadership{}, nil, err
		}
		return Leadership{ID: string(data), Node: nodes[0], Token: st.Czxid, Since: time.UnixMilli(st.Ctime)}, watch, nil
	}
}

// permanent tells the errors that looking again cannot cure.
func permanent(err error) bool {
	return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed) ||
		errors.Is(err, zk.ErrBadArguments) || errors.Is(err, zkrecipes.ErrInvalidArgument) ||
		errors.Is(err, zkrecipes.ErrClosed)
}
