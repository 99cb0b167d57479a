package framework

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/metrics"
	"github.com/zkrecipes/zkrecipes/retry"
)

// Get returns the data and Stat of the node at path.
func (c *Client) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	if err := c.check(ctx, "get", path, false); err != nil {
		return nil, nil, err
	}
	r, err := doValue(c, ctx, "get", path, func(z *zk.Conn) (nodeResult, error) {
		data, st, err := z.Get(c.ns.fix(path))
		return nodeResult{data: data, stat: st}, err
	})
	return r.data, r.stat, err
}

// GetW is Get that also sets a data watch, which fires when the node
// changes or is deleted. The channel is the one form of a watch, the same
// for ExistsW and ChildrenW:
//
//   - It receives one event and is then closed: the node's change, or an
//     event of type zk.EventNotWatching when the watch can no longer fire,
//     because the session expired (Err zk.ErrSessionExpired) or the client
//     closed (Err zk.ErrClosing; by the time Close returns it has been
//     sent). A link that drops and comes back within the session keeps the
//     watch: go-zookeeper sets it again, and a change missed meanwhile
//     fires it.
//   - The event's Path is the node's path as the caller names it, without
//     the client's namespace.
//   - Nothing is sent when ctx ends: ctx bounds the read, not the watch. A
//     waiter selects on its own ctx.Done() (and, to be told of Close at
//     once, on Done()) beside the channel. A watch whose node never changes
//     stays registered in the session until it ends, whether or not anyone
//     reads the channel; it costs a buffered channel, and no goroutine
//     unless the client has a namespace (one that ends with the event, at
//     Close, or when ctx ends).
//
// The Stat is the node's as the watch was set.
//
// With Into(w), the watch's event goes to w instead, and the channel
// returned is nil: a recipe that watches many nodes reads them all from one
// queue it owns, with no goroutine per watch, namespace or not.
func (c *Client) GetW(ctx context.Context, path string, opts ...WatchOption) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	r, err := c.watchRead(ctx, "getw", path, WatchData, opts, func(z *zk.Conn, p string) (nodeResult, error) {
		data, st, ch, err := z.GetW(p)
		return nodeResult{data: data, stat: st, watch: ch}, err
	})
	return r.data, r.stat, r.watch, err
}

// Set writes data to the node at path if its version is version (-1: any).
// A request over the client's size limit fails with zkrecipes.ErrTooLarge, unsent
// (see WithMaxRequestSize).
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	if err := c.check(ctx, "set", path, false); err != nil {
		return nil, err
	}
	size := requestHeaderSize + setBodySize(c.ns.fixedLen(path, false), data)
	if size > c.maxRequest {
		return nil, c.tooLarge("set", path, size, "")
	}
	return doSized(c, ctx, "set", path, size, func(z *zk.Conn) (*zk.Stat, error) {
		return z.Set(c.ns.fix(path), data, version)
	})
}

// Exists reports whether the node at path exists, with its Stat if so.
func (c *Client) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	if err := c.check(ctx, "exists", path, false); err != nil {
		return false, nil, err
	}
	r, err := doValue(c, ctx, "exists", path, func(z *zk.Conn) (nodeResult, error) {
		ok, st, err := z.Exists(c.ns.fix(path))
		return nodeResult{exists: ok, stat: st}, err
	})
	return r.exists, r.stat, err
}

// ExistsW is Exists that also sets a watch, whether or not the node
// exists: it fires when the node is created, changed or deleted. The
// channel, and Into, are as GetW says.
func (c *Client) ExistsW(ctx context.Context, path string, opts ...WatchOption) (bool, *zk.Stat, <-chan zk.Event, error) {
	r, err := c.watchRead(ctx, "existsw", path, WatchExists, opts, func(z *zk.Conn, p string) (nodeResult, error) {
		ok, st, ch, err := z.ExistsW(p)
		return nodeResult{exists: ok, stat: st, watch: ch}, err
	})
	return r.exists, r.stat, r.watch, err
}

// Children returns the names of the children of path, in no particular
// order.
func (c *Client) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	if err := c.check(ctx, "children", path, false); err != nil {
		return nil, nil, err
	}
	r, err := doValue(c, ctx, "children", path, func(z *zk.Conn) (nodeResult, error) {
		kids, st, err := z.Children(c.ns.fix(path))
		return nodeResult{children: kids, stat: st}, err
	})
	return r.children, r.stat, err
}

// ChildrenW is Children that also sets a watch, which fires when a child
// is added or removed, or the node is deleted. The channel, and Into, are
// as GetW says.
func (c *Client) ChildrenW(ctx context.Context, path string, opts ...WatchOption) ([]string, *zk.Stat, <-chan zk.Event, error) {
	r, err := c.watchRead(ctx, "childrenw", path, WatchChildren, opts, childrenW)
	return r.children, r.stat, r.watch, err
}

func childrenW(z *zk.Conn, p string) (nodeResult, error) {
	kids, st, ch, err := z.ChildrenW(p)
	return nodeResult{children: kids, stat: st, watch: ch}, err
}

// watchRead makes the watched read op of path (given op the path with the
// namespace) and hands its watch over (handOver), or routes it into the
// queue opts name (intoRead). On an error it returns nothing: a watch set
// by an attempt that failed, if any, is nobody's.
func (c *Client) watchRead(ctx context.Context, name, path string, kind WatchKind, opts []WatchOption, op func(z *zk.Conn, p string) (nodeResult, error)) (nodeResult, error) {
	var o watchOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyWatch(&o)
		}
	}
	if o.intoSet {
		return c.intoRead(ctx, name, path, o.into, kind, op)
	}
	r, err := c.rawWatchRead(ctx, name, path, op)
	if err != nil {
		return nodeResult{}, err
	}
	r.watch = c.handOver(ctx, path, r.watch)
	return r, nil
}

// rawWatchRead is watchRead whose watch is go-zookeeper's channel as it
// is, the event's Path with the namespace: for the client's own waits,
// which only need to know that it fired (a queue's listing).
func (c *Client) rawWatchRead(ctx context.Context, name, path string, op func(z *zk.Conn, p string) (nodeResult, error)) (nodeResult, error) {
	if err := c.check(ctx, name, path, false); err != nil {
		return nodeResult{}, err
	}
	return doValue(c, ctx, name, path, func(z *zk.Conn) (nodeResult, error) {
		return op(z, c.ns.fix(path))
	})
}

// intoRead is watchRead whose watch the router delivers into w. The route
// is added before the read is sent (see router) and removed if the read
// fails.
func (c *Client) intoRead(ctx context.Context, name, path string, w *Watches, kind WatchKind, op func(z *zk.Conn, p string) (nodeResult, error)) (nodeResult, error) {
	if w == nil {
		return nodeResult{}, opErr(name, path, fmt.Errorf("%w: Into(nil): no Watches to deliver to", zkrecipes.ErrInvalidArgument))
	}
	if err := c.check(ctx, name, path, false); err != nil {
		return nodeResult{}, err
	}
	full := c.ns.fix(path)
	ok, fresh, gen := c.router.add(full, w, kind)
	if !ok {
		return nodeResult{}, opErr(name, path, zkrecipes.ErrClosed)
	}
	if !fresh {
		// Watched already, into w: the read alone.
		return doValue(c, ctx, name, path, func(z *zk.Conn) (nodeResult, error) {
			return plainRead(z, kind, full)
		})
	}
	res, err := doValue(c, ctx, name, path, func(z *zk.Conn) (nodeResult, error) {
		return op(z, full)
	})
	if err != nil {
		c.router.remove(full, w, kind, gen)
		return nodeResult{}, err
	}
	c.router.answered(full, w, kind)
	res.watch = nil // go-zookeeper's: it fires and is collected unread
	return res, nil
}

// plainRead is the read of a watched read of kind k, without the watch.
func plainRead(z *zk.Conn, k WatchKind, full string) (nodeResult, error) {
	var r nodeResult
	var err error
	switch k {
	case WatchData:
		r.data, r.stat, err = z.Get(full)
	case WatchExists:
		r.exists, r.stat, err = z.Exists(full)
	default:
		r.children, r.stat, err = z.Children(full)
	}
	return r, err
}

// GetACL returns the ACL of the node at path, and its Stat.
func (c *Client) GetACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error) {
	if err := c.check(ctx, "getacl", path, false); err != nil {
		return nil, nil, err
	}
	type aclResult struct {
		acl  []zk.ACL
		stat *zk.Stat
	}
	r, err := doValue(c, ctx, "getacl", path, func(z *zk.Conn) (aclResult, error) {
		acl, st, err := z.GetACL(c.ns.fix(path))
		return aclResult{acl, st}, err
	})
	return r.acl, r.stat, err
}

// nodeResult carries a read's results out of the call that may be abandoned.
type nodeResult struct {
	data     []byte
	stat     *zk.Stat
	exists   bool
	children []string
	watch    <-chan zk.Event
}

// Sync makes the server the client is connected to catch up with the leader
// on path, so that a read after it sees every write committed before it.
func (c *Client) Sync(ctx context.Context, path string) error {
	if err := c.check(ctx, "sync", path, false); err != nil {
		return err
	}
	return c.do(ctx, "sync", path, func(z *zk.Conn) error {
		_, err := z.Sync(c.ns.fix(path))
		return err
	})
}

// handOver gives the caller ch, the watch go-zookeeper set, in the form
// GetW promises. Without a namespace that is ch itself: go-zookeeper sends
// one event and closes it, and sends EventNotWatching on session expiry
// and on Close (the client's Close waits for that), so nothing needs to run
// for it. With a namespace a goroutine forwards the event with the
// namespace taken off its Path; it ends with the event, at Close (sending
// what go-zookeeper would), or when ctx ends (sending nothing; a watch on
// the client's own life ends at Close). A read given Into is not
// handed over here: the client's router (watches.go) delivers its event
// from the session's callback, with no goroutine, namespace or not.
func (c *Client) handOver(ctx context.Context, path string, ch <-chan zk.Event) <-chan zk.Event {
	if c.ns == "" {
		return ch
	}
	out := make(chan zk.Event, 1)
	closing := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: path, Err: zk.ErrClosing}
	var ended <-chan struct{}
	if ctx != c.life {
		ended = ctx.Done()
	}
	if !c.Go(func() {
		select {
		case ev, ok := <-ch:
			if ok {
				ev.Path = c.ns.unfix(ev.Path)
				out <- ev
			}
		case <-c.quit:
			out <- closing
		case <-ended:
			return // the caller stopped waiting: nobody reads out
		}
		close(out)
	}) {
		out <- closing
		close(out)
	}
	return out
}

// Multi applies ops atomically: all or none. ops are *zk.CreateRequest,
// *zk.DeleteRequest, *zk.SetDataRequest and *zk.CheckVersionRequest with
// paths as the caller sees them; a create without an ACL gets the provider's.
// A create with the container or a TTL flag is refused with
// zkrecipes.ErrUnsupportedInMulti before anything is sent: ZooKeeper 3.8 applies a
// container create in a multi but answers it with a reply go-zookeeper
// cannot read (the multi is reported failed though it was applied), and
// fails a TTL create. A multi over the client's size limit (all its ops
// together) fails with zkrecipes.ErrTooLarge, unsent, naming its largest op's path.
// When one op fails, nothing is applied and the error wraps a
// *MultiOpError naming it.
// Like every retried write, a Multi whose reply was lost may have been
// applied: a retry then fails on the first conflicting op, or, with no op
// that conflicts (a sequential create, a set of any version), applies the
// ops a second time. hold.Hold.Fenced sends at most once.
func (c *Client) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if err := c.checkMultiCall(ctx); err != nil {
		return nil, err
	}
	fixed, paths, size, err := c.prepareMulti(ops)
	if err != nil {
		return nil, err
	}
	if err := c.ensureNamespace(ctx); err != nil {
		return nil, err
	}
	res, err := doSized(c, ctx, "multi", "", size, func(z *zk.Conn) ([]zk.MultiResponse, error) {
		res, err := z.Multi(fixed...)
		if err != nil && len(res) > 0 {
			return nil, &multiFailed{res: res, err: err}
		}
		return res, err
	})
	var mf *multiFailed
	if errors.As(err, &mf) {
		return c.multiResult(mf.res, paths, mf.err)
	}
	if err != nil {
		return res, err // doValue's: an *OpError already
	}
	return c.multiResult(res, paths, nil)
}

// multiFailed carries the results of a multi the server answered with a
// failed op out of doValue, which keeps results only on success.
type multiFailed struct {
	res []zk.MultiResponse
	err error
}

func (e *multiFailed) Error() string { return e.err.Error() }
func (e *multiFailed) Unwrap() error { return e.err }

// checkMultiCall refuses a multi with a nil context or on a closed
// client, before anything is sent.
func (c *Client) checkMultiCall(ctx context.Context) error {
	if ctx == nil {
		return opErr("multi", "", zkrecipes.ErrNilContext)
	}
	if c.closed.Load() {
		return opErr("multi", "", zkrecipes.ErrClosed)
	}
	return nil
}

// prepareMulti checks ops and returns them with the namespace applied,
// each op's path as the caller gave it, and the size of the multi's
// request: the header, each op's header and body, the end marker.
func (c *Client) prepareMulti(ops []any) ([]any, []string, int, error) {
	fixed := make([]any, len(ops))
	paths := make([]string, len(ops))
	size := requestHeaderSize + multiHeaderSize
	largest, largestSize := 0, 0
	for i, op := range ops {
		f, path, opSize, err := c.prepareOp(i, op)
		if err != nil {
			return nil, nil, 0, err
		}
		fixed[i], paths[i] = f, path
		size += multiHeaderSize + opSize
		if opSize > largestSize {
			largest, largestSize = i, opSize
		}
	}
	if size > c.maxRequest {
		if len(ops) == 0 {
			return nil, nil, size, c.tooLarge("multi", "", size, "no ops")
		}
		// Named by its largest op: the one to make smaller, usually.
		return nil, nil, size, c.tooLarge("multi", paths[largest], size,
			fmt.Sprintf("%d ops; op %d, the largest, is %d of them", len(ops), largest, multiHeaderSize+largestSize))
	}
	return fixed, paths, size, nil
}

// prepareOp checks op, the multi's op i, and returns a copy of it with the
// namespace applied, its path as the caller gave it, and the size of its
// body.
func (c *Client) prepareOp(i int, op any) (any, string, int, error) {
	var path string
	var sequential bool
	var fixed any
	var opSize int
	bad := func(format string, args ...any) error {
		return opErr("multi", path, fmt.Errorf("op %d: %w: "+format, append([]any{i, zkrecipes.ErrInvalidArgument}, args...)...))
	}
	switch r := op.(type) {
	case *zk.CreateRequest:
		if r == nil {
			return nil, "", 0, bad("nil %T", op)
		}
		path = r.Path
		if r.Flags == zk.FlagContainer || r.Flags == zk.FlagTTL || r.Flags == zk.FlagPersistentSequentialWithTTL {
			return nil, "", 0, opErr("multi", path, fmt.Errorf("op %d: %w: create flags %d (container or TTL): use Create", i, zkrecipes.ErrUnsupportedInMulti, r.Flags))
		}
		cp := *r
		sequential = r.Flags&zk.FlagSequence != 0
		cp.Path = c.ns.fixCreate(r.Path, sequential)
		cp.Acl = c.aclFor(r.Path, r.Acl)
		fixed, opSize = &cp, createBodySize(len(cp.Path), cp.Data, cp.Acl, false)
	case *zk.DeleteRequest:
		if r == nil {
			return nil, "", 0, bad("nil %T", op)
		}
		path = r.Path
		if r.Path == "/" {
			return nil, "", 0, bad("cannot delete the root")
		}
		cp := *r
		cp.Path = c.ns.fix(r.Path)
		fixed, opSize = &cp, pathVersionBodySize(len(cp.Path))
	case *zk.SetDataRequest:
		if r == nil {
			return nil, "", 0, bad("nil %T", op)
		}
		cp := *r
		path, cp.Path = r.Path, c.ns.fix(r.Path)
		fixed, opSize = &cp, setBodySize(len(cp.Path), cp.Data)
	case *zk.CheckVersionRequest:
		if r == nil {
			return nil, "", 0, bad("nil %T", op)
		}
		cp := *r
		path, cp.Path = r.Path, c.ns.fix(r.Path)
		fixed, opSize = &cp, pathVersionBodySize(len(cp.Path))
	default:
		return nil, "", 0, bad("unsupported op type %T", op)
	}
	if err := validatePath(path, sequential); err != nil {
		return nil, "", 0, opErr("multi", path, fmt.Errorf("op %d: %w", i, err))
	}
	return fixed, path, opSize, nil
}

// multiResult takes the namespace off res and, if an op failed, names it
// in the error.
func (c *Client) multiResult(res []zk.MultiResponse, paths []string, err error) ([]zk.MultiResponse, error) {
	for i := range res {
		if res[i].String != "" {
			res[i].String = c.ns.unfix(res[i].String)
		}
	}
	if err == nil {
		return res, nil
	}
	// The server fails the first op that cannot apply; the ops before it
	// say OK, those after it a runtime inconsistency.
	for i := range res {
		if res[i].Error != nil && i < len(paths) {
			return res, opErr("multi", paths[i], &MultiOpError{Index: i, Path: paths[i], Err: res[i].Error})
		}
	}
	return res, opErr("multi", "", err)
}

// MultiOnce is Multi sent at most once: it is never sent again after it
// may have reached the server, whatever the retry policy. An error that
// leaves its outcome unknown (the connection dropped while it was on its
// way, the client closed, ctx ended after it was handed to the
// connection) wraps zkrecipes.ErrOutcomeUnknown: read the state to learn whether it
// was applied (all of it or none) before writing again. Use it for writes
// that a second application would corrupt: a sequential create, a set at
// version -1, a count-down (hold.Hold.Fenced sends through it).
func (c *Client) MultiOnce(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if err := c.checkMultiCall(ctx); err != nil {
		return nil, err
	}
	fixed, paths, size, err := c.prepareMulti(ops)
	if err != nil {
		return nil, err
	}
	if err := c.ensureNamespace(ctx); err != nil {
		return nil, err // nothing of ours sent yet
	}
	if err := ctx.Err(); err != nil {
		return nil, opErr("multi", "", err)
	}
	mop, measured := metrics.OpNamed("multi")
	var res []zk.MultiResponse
	// Resent only when go-zookeeper proves it never sent it: a request
	// still queued when a round of servers all failed to connect is
	// failed with zk.ErrNoServer, unsent.
	err = retry.Do(ctx, c.retry, func(ctx context.Context) error {
		start := time.Now()
		var err error
		res, err = callValue(c, ctx, func() ([]zk.MultiResponse, error) { return c.zk().Multi(fixed...) })
		if measured {
			c.metrics.Request(ctx, mop, time.Since(start), err)
		}
		return err
	}, retry.WithRetryable(func(err error) bool { return errors.Is(err, zk.ErrNoServer) }))
	switch {
	case len(res) > 0:
		// Answered: applied, or an op failed and nothing was.
	case size > DefaultMaxRequestSize && replyLost(err) && !errors.Is(err, zk.ErrNoServer):
		// The server may have closed the link on it for its size.
		err = unanswered(size, c.closedErr(err))
	default:
		err = c.onceErr(err)
	}
	return c.multiResult(res, paths, err)
}

// sendOnce runs op, which sends one write, so that the write is never sent
// again once it may have reached the server: what CreateAtMostOnce and
// DeleteAtMostOnce ask for. An error that leaves its outcome unknown wraps
// zkrecipes.ErrOutcomeUnknown (see onceErr). op may fail with unsent when the write
// itself was answered and something around it failed: op is then run
// again, as for any retryable error.
func sendOnce[T any](c *Client, ctx context.Context, name, path string, op func(z *zk.Conn) (T, error)) (T, error) {
	var out T
	if c.closed.Load() {
		return out, opErr(name, path, zkrecipes.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return out, opErr(name, path, err) // nothing sent
	}
	out, err := measured(c, ctx, name, op, retry.WithRetryable(func(err error) bool {
		var u unsent
		return errors.Is(err, zk.ErrNoServer) || errors.As(err, &u) && retry.Retryable(u.err)
	}))
	return out, opErr(name, path, c.onceErr(err))
}

// unsent is the error of an attempt at a write sent at most once in which
// the write itself was answered without being applied, and what failed
// came around it (making a create's missing parents): sending it again
// is safe.
type unsent struct{ err error }

func (e unsent) Error() string { return e.err.Error() }
func (e unsent) Unwrap() error { return e.err }

// onceErr is the error of a write sent at most once that got no answer
// (err nil: it was answered, and applied): the outcome is unknown, and the
// error wraps zkrecipes.ErrOutcomeUnknown, unless the write provably never left.
func (c *Client) onceErr(err error) error {
	var u unsent
	switch {
	case err == nil:
		return nil
	case errors.As(err, &u):
		// Answered: the last attempt's write was not applied, and ctx or
		// the client ended before it was sent again.
		return c.closedErr(err)
	case errors.Is(err, zk.ErrNoServer):
		// Never sent: go-zookeeper fails a request still queued when a
		// round of servers all failed to connect, even if ctx ended while
		// waiting to resend.
		return err
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrClosing),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, zkrecipes.ErrClosed):
		// Handed to the connection and not answered: go-zookeeper fails
		// requests it had sent when the link drops, and sends the ones it
		// had queued once it is back.
		return fmt.Errorf("%w: %w", zkrecipes.ErrOutcomeUnknown, c.closedErr(err))
	}
	return err // the server's answer
}
