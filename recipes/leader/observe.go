package leader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/errs"
	"github.com/zkrecipes/zkrecipes/internal/fwlink"
	"github.com/zkrecipes/zkrecipes/internal/option"
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
}

// HasLeader reports whether somebody leads.
func (l Leadership) HasLeader() bool { return l.Node != "" }

// sameTerm compares by node and token: an id says nothing (a participant
// that leaves and queues again is a new term under the same id).
func (l Leadership) sameTerm(o Leadership) bool { return l.Node == o.Node && l.Token == o.Token }

// Observer is the stream of leadership changes of one path, from Observe.
// Read Changes until it is closed, then Err says why it ended.
type Observer struct {
	ch chan Leadership

	mu  sync.Mutex
	err error
}

// Changes returns the stream. The first value is the state when Observe
// first looks; every later one differs from the one before it in the
// leader's node or token. The channel is unbuffered and the observer waits
// for its reader: a reader that falls behind gets the state of when it
// reads, never a backlog. It is closed when the stream ends.
func (o *Observer) Changes() <-chan Leadership { return o.ch }

// Err returns why the stream ended, once Changes is closed (nil before):
// the context's error when the context ended, ErrClosed (with
// framework.ErrClosed) when the client closed, or a ZooKeeper error that
// looking again cannot cure (zk.ErrNoAuth: the client may not read the
// path).
func (o *Observer) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

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
// ctx ends or the client closes, whether or not anyone reads. Observe
// takes no options yet (any is refused with ErrInvalidOption). A nil
// client is ErrNilClient, a bad path framework.ErrInvalidPath, a nil ctx
// framework.ErrInvalidArgument and a closed client ErrClosed.
func Observe(ctx context.Context, client *framework.Client, path string, opts ...Option) (*Observer, error) {
	if client == nil {
		return nil, fmt.Errorf("leader: %w", ErrNilClient)
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	if err := errs.NilContext(ctx, "leader: observe "+path); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(opts, func(o Option) bool { return o != nil }) {
		_, err := option.Build("leader observer", nil, opts)
		return nil, err
	}
	if client.Closed() {
		return nil, fmt.Errorf("leader: observe %s: %w", path, contend.Err(framework.ErrClosed, false))
	}
	life, stop := context.WithCancelCause(ctx)
	remove := fwlink.Of(client).OnClose(func() { stop(framework.ErrClosed) })
	o := &Observer{ch: make(chan Leadership)}
	go func() {
		defer close(o.ch)
		defer remove()
		err := o.run(life, client, path)
		stop(nil)
		switch {
		case ctx.Err() != nil:
			err = ctx.Err() // the caller's own: as is
		case errors.Is(context.Cause(life), framework.ErrClosed) || errors.Is(err, framework.ErrClosed):
			err = fmt.Errorf("leader: observe %s: %w", path, contend.Err(framework.ErrClosed, false))
		default:
			err = fmt.Errorf("leader: observe %s: %w", path, err)
		}
		o.mu.Lock()
		o.err = err
		o.mu.Unlock()
	}()
	return o, nil
}

// run looks, reports and waits for the next reason to look, until life
// ends or an error that looking again cannot cure.
func (o *Observer) run(life context.Context, c *framework.Client, path string) error {
	var last Leadership
	reported := false
	var woke time.Time // when the last wait ended; zero before the first look
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
			if !contend.Pause(life) {
				return life.Err()
			}
			continue
		}
		if !reported || !now.sameTerm(last) {
			// Seen happening: no earlier than when the observer woke.
			if !now.HasLeader() || now.Since.Before(woke) {
				now.Since = woke
			}
			select {
			case o.ch <- now:
				last, reported = now, true
			case <-life.Done():
				endLook()
				return life.Err()
			}
		}
		// A watch event of any kind (the node went, the path changed, the
		// watch ended with the session or the client), or the link going
		// down, is a reason to look again once connected.
		select {
		case <-watch:
		case <-s.Suspended:
		case <-life.Done():
		}
		woke = time.Now()
		endLook()
	}
}

// look reads who leads path and sets one watch that fires when that may
// change: on the leader's node, else on the path's children, else (no
// path) on the path's creation. The watch lives as long as ctx.
func look(ctx context.Context, c *framework.Client, path string) (Leadership, <-chan zk.Event, error) {
	for {
		nodes, err := contend.Nodes(ctx, c, path, latchName, "lock-")
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
		errors.Is(err, zk.ErrBadArguments) || errors.Is(err, framework.ErrInvalidArgument) ||
		errors.Is(err, framework.ErrClosed)
}
