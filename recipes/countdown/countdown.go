package countdown

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/retry"
)

// recipe names a Countdown in its errors.
const recipe = "countdown"

// Names of the latch's children (see the package doc).
const (
	genPrefix = "gen-"
	cdPrefix  = "cd-"
)

// deleteBatch bounds the ops of one multi that deletes a finished latch's
// children: a multi is one request, and the server refuses requests larger
// than jute.maxbuffer (1 MB by default).
const deleteBatch = 500

// Countdown is a handle on the countdown latch at one path: Redisson's
// RCountDownLatch. It is safe for concurrent use; it holds nothing on the
// server, so any number of handles, in any processes, may share a path.
// Make one with New.
type Countdown struct {
	client *framework.Client
	path   string
	count  int
	id     []byte

	// rt is the handle's closed state and Close. The handle runs nothing
	// in the background: the contexts of Within, which Close ends, are
	// what end the calls in progress (see begin).
	rt *framework.Runtime
	mu sync.Mutex
	// gen is the gen- child of the latch this handle last set or counted
	// on: a count-down names it in its multi's check without listing the
	// latch, and the check proves it (see look).
	gen string
}

// New returns a handle on the latch at path. count is what TrySetCount
// sets: from 0 to math.MaxInt32 (0: an open latch, see the package doc; a
// handle that only counts down or waits may pass 0). It sends nothing.
func New(client *framework.Client, path string, count int, opts ...Option) (*Countdown, error) {
	if client == nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	if count < 0 || count > math.MaxInt32 {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: count %d: must be from 0 to %d", zkrecipes.ErrInvalidArgument, count, math.MaxInt32))
	}
	cfg, err := framework.Configure(recipe, path, config{}, opts, Option.applyCountdown)
	if err != nil {
		return nil, err
	}
	id := []byte(cfg.ParticipantID())
	// The id is the data of the gen- and cd- children the multis of
	// TrySetCount and CountDown make.
	gen := framework.Join(path, genPrefix+uuid.NewString())
	err = client.CheckMulti(
		&zk.CreateRequest{Path: path, Data: encode(count)},
		&zk.CreateRequest{Path: gen, Data: id})
	if err == nil {
		err = client.CheckMulti(
			&zk.CheckVersionRequest{Path: gen, Version: -1},
			&zk.CreateRequest{Path: framework.Join(path, cdPrefix+uuid.NewString()), Data: id},
			&zk.SetDataRequest{Path: path, Data: encode(count), Version: -1})
	}
	if err != nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: participant id of %d bytes: %w", zkrecipes.ErrInvalidArgument, len(id), err))
	}
	l := &Countdown{client: client, path: path, count: count, id: id, rt: framework.NewRuntime(client, recipe, path)}
	return l, nil
}

// Path returns the latch's path.
func (l *Countdown) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// Close ends the calls in progress on this handle (a Wait, a CountDown:
// they return an error wrapping zkrecipes.ErrClosed, and a CountDown whose
// multi was on its way zkrecipes.ErrOutcomeUnknown too) and makes later
// calls fail with zkrecipes.ErrClosed. The handle makes no ephemeral node,
// so it deletes nothing: the latch, its count and its children are
// persistent and belong to no session, and stay as they are. The client is
// not closed. Close sends nothing and is idempotent: later calls return
// nil.
func (l *Countdown) Close() error {
	if err := l.usable(); err != nil {
		return err
	}
	return l.rt.Close(nil)
}

// usable says why l cannot be used: it is nil or a zero Countdown.
func (l *Countdown) usable() error {
	if l == nil || l.rt == nil {
		return framework.Invalid(recipe, "Countdown", "New")
	}
	return nil
}

// sync makes the server this client reads from catch up with the leader
// on the latch's path before a call's first read: the calls decide on
// what they read (no latch to count, one already set, an open latch), and
// a follower that lags may not have applied a write made before the call
// began. The reads after it, and after a reconnect (a server takes the
// session only once it has seen all the client has), are at least as new.
func (l *Countdown) sync(ctx context.Context) error {
	err := l.client.Sync(ctx, l.path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// next says how a call's loop goes on after one pass (a step).
type next int

const (
	// stop: the call returns the step's answer, or fails with its error.
	stop next = iota
	// again: look again at once.
	again
	// pause: the step failed; look again after a pause if its error is
	// transient (the link's, not the request's), else fail with it.
	pause
)

// synced syncs (see sync) before a call's first read, waiting out the
// transient failures on p.
func (l *Countdown) synced(ctx context.Context, p *retry.Pacer) error {
	for {
		err := l.sync(ctx)
		if err == nil || !l.waitOut(ctx, p, err) {
			return err
		}
	}
}

// waitOut reports whether a call outlives err, a transient one, and sleeps
// p's next pause before it looks again (false if ctx or the handle ends
// first).
func (l *Countdown) waitOut(ctx context.Context, p *retry.Pacer, err error) bool {
	return l.transient(ctx, err) && l.rt.Retry(ctx, p, err)
}

// Count returns the latch's remaining count: 0 if there is no latch at
// path.
func (l *Countdown) Count(ctx context.Context) (int, error) {
	ctx, done, err := l.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	data, _, err := l.client.Get(ctx, l.path)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, l.fail(err, false)
	}
	n, err := decode(data)
	if err != nil {
		return 0, l.fail(err, false)
	}
	return max(n, 0), nil
}

// begin checks the handle and ctx before anything is sent, and returns a
// context that also ends with Close.
func (l *Countdown) begin(ctx context.Context) (context.Context, func(), error) {
	if err := l.usable(); err != nil {
		return nil, nil, err
	}
	cctx, cancel, err := l.rt.Within(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		cancel()
		return nil, nil, l.rt.Err(err) // nothing sent for a call already over
	}
	return cctx, cancel, nil
}

// fail gives err the module's sentinels, zkrecipes.ErrClosed after Close
// (the handle's or the client's) and zkrecipes.ErrOutcomeUnknown if a
// write may have been applied, and names the latch.
func (l *Countdown) fail(err error, maybe bool) error {
	err = engine.Err(err, l.rt.Closed() || l.client.Closed())
	if maybe && !errors.Is(err, zkrecipes.ErrOutcomeUnknown) {
		err = fmt.Errorf("%w: %w", zkrecipes.ErrOutcomeUnknown, err)
	}
	return l.rt.Err(err)
}

// transient reports whether err is one a call outlives by waiting for the
// link: the session or the connection failed, not the request.
func (l *Countdown) transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil || l.rt.Closed() || errors.Is(err, zkrecipes.ErrClosed) {
		return false
	}
	if errors.Is(err, zkrecipes.ErrOutcomeUnknown) && !retry.Retryable(err) {
		// The framework will not resend it (the server may have closed
		// the link on it for its size): neither does the latch.
		return false
	}
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, zkrecipes.ErrOutcomeUnknown)
}

// sent reports whether a write that failed with err may have reached the
// server. Only a refusal before sending (bad input, a closed client, ctx
// already over) or a request go-zookeeper never sent (zk.ErrNoServer) is
// known not to have.
func sent(err error) bool {
	if errors.Is(err, zkrecipes.ErrOutcomeUnknown) {
		return true
	}
	var me *framework.MultiOpError
	return !errors.As(err, &me) && !errors.Is(err, zk.ErrNoServer) &&
		!errors.Is(err, zkrecipes.ErrInvalidArgument) && !errors.Is(err, zkrecipes.ErrClosed) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func encode(n int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(int32(n))) }

func decode(data []byte) (int, error) {
	if len(data) != 4 {
		return 0, fmt.Errorf("%w: data of %d bytes, not a 4-byte count", zkrecipes.ErrBadData, len(data))
	}
	return int(int32(binary.BigEndian.Uint32(data))), nil
}
