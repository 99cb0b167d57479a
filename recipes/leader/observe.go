package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// Observer is the stream of leadership changes of one path, from Observe.
// Read Changes until it is closed, then Err says why it ended.
type Observer struct {
	ch   chan Leadership
	stop context.CancelCauseFunc
	done chan struct{} // closed when its goroutine has ended

	mu  sync.Mutex
	err error
}

// Changes returns the stream. The first value is the state when Observe
// first looks; every later one differs from the one before it in the
// leader's node or token, or in whether it may be stale (Stale). The
// channel is unbuffered and the observer waits for its reader: a reader
// that falls behind gets the state of when it reads, never a backlog. It
// is closed when the stream ends.
func (o *Observer) Changes() <-chan Leadership { return o.ch }

// Err returns why the stream ended, once Changes is closed (nil before):
// the context's error when the context ended, zkrecipes.ErrClosed (with
// zkrecipes.ErrClosed) when the client closed, or a ZooKeeper error that
// looking again cannot cure (zk.ErrNoAuth: the client may not read the
// path).
func (o *Observer) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Close ends the stream at once (Changes closes; Err then says nothing:
// the reader ended it) and waits for its goroutine. It is idempotent.
func (o *Observer) Close() {
	o.stop(errObserverClosed)
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
// One goroutine serves the stream; it ends, and the channel closes, when
// ctx ends, the client closes or Close is called, whether or not anyone
// reads. A nil client or context is zkrecipes.ErrInvalidArgument, a bad
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
	o := &Observer{ch: make(chan Leadership), stop: stop, done: make(chan struct{})}
	serve := func() {
		defer close(o.done)
		defer close(o.ch)
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
		o.mu.Lock()
		o.err = err
		o.mu.Unlock()
	}
	if !client.Go(serve) {
		remove()
		stop(nil)
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
			if !o.send(life, now) {
				endLook()
				return life.Err()
			}
			last, reported = now, true
		}
		var sent bool
		last, sent = o.wait(life, watch, s.Suspended, last)
		endLook()
		if !sent {
			return life.Err()
		}
		woke = time.Now()
	}
}

// wait waits for a reason to look again: a watch event of any kind (the
// node went, the path changed, the watch ended with the session or the
// client), or the link going down, after which what it said last may be
// stale until it has looked again: it tells the reader so, and returns
// what it told. It reports false if life ended before the reader took it.
func (o *Observer) wait(life context.Context, watch <-chan zk.Event, suspended <-chan struct{}, last Leadership) (Leadership, bool) {
	select {
	case <-watch:
	case <-suspended:
		stale := last
		stale.Stale = fmt.Errorf("%w: %w", zkrecipes.ErrStale, zkrecipes.ErrSuspended)
		if !o.send(life, stale) {
			return last, false
		}
		return stale, true
	case <-life.Done():
	}
	return last, true
}

// send hands l to the reader, and reports false if life ended first.
func (o *Observer) send(life context.Context, l Leadership) bool {
	select {
	case o.ch <- l:
		return true
	case <-life.Done():
		return false
	}
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
