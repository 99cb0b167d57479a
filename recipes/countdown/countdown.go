package countdown

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
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

	life   context.Context // cancelled by Close: ends calls in progress
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
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
	cfg, err := newConfig(path, opts)
	if err != nil {
		return nil, err
	}
	// The id is the data of the gen- and cd- children the multis of
	// TrySetCount and CountDown make.
	gen := framework.Join(path, genPrefix+uuid.NewString())
	err = client.CheckMulti(
		&zk.CreateRequest{Path: path, Data: encode(count)},
		&zk.CreateRequest{Path: gen, Data: cfg.id})
	if err == nil {
		err = client.CheckMulti(
			&zk.CheckVersionRequest{Path: gen, Version: -1},
			&zk.CreateRequest{Path: framework.Join(path, cdPrefix+uuid.NewString()), Data: cfg.id},
			&zk.SetDataRequest{Path: path, Data: encode(count), Version: -1})
	}
	if err != nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: participant id of %d bytes: %w", zkrecipes.ErrInvalidArgument, len(cfg.id), err))
	}
	l := &Countdown{client: client, path: path, count: count, id: cfg.id}
	l.life, l.cancel = context.WithCancel(context.Background())
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
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.cancel()
	}
	return nil
}

// usable says why l cannot be used: it is nil or a zero Countdown.
func (l *Countdown) usable() error {
	if l == nil || l.client == nil {
		return framework.RecipeErr(recipe, "", fmt.Errorf("%w: a nil or zero Countdown: make one with New", zkrecipes.ErrInvalidArgument))
	}
	return nil
}

func (l *Countdown) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// TrySetCount makes the latch with the handle's count if path holds no
// unfinished latch, and reports whether it did (Redisson's trySetCount).
// An unfinished latch already there is left as it is, whatever its count:
// false. A finished latch not yet deleted is deleted first. With count 0
// nothing is made: it reports whether path holds no unfinished latch.
//
// The create is sent at most once: after a lost reply the latch is read,
// and the setter's own gen- child tells whether it was made. If no latch,
// or another one, is there then, the error wraps zkrecipes.ErrOutcomeUnknown: it
// may have been made and finished already, and making it again could set
// a latch that nobody counts down.
func (l *Countdown) TrySetCount(ctx context.Context) (bool, error) {
	ctx, done, err := l.begin(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	gen := genPrefix + uuid.NewString()
	genPath := framework.Join(l.path, gen)
	p := l.client.RetryPolicy().Pacer()
	maybe := false // a create we sent may have been applied
	fail := func(err error) (bool, error) { return false, l.fail(err, maybe) }
	synced := false
	for {
		if !synced {
			if err := l.sync(ctx); err != nil {
				if l.transient(ctx, err) && p.Wait(ctx) {
					continue
				}
				return fail(err)
			}
			synced = true
		}
		s, err := l.read(ctx)
		if err != nil {
			if l.transient(ctx, err) && p.Wait(ctx) {
				continue
			}
			return fail(err)
		}
		if s.exists {
			switch {
			case slices.Contains(s.kids, gen):
				l.remember("", gen)
				return true, nil
			case maybe:
				// Not ours: ours was never made, or made, counted down
				// to zero and replaced.
				return fail(errors.New("another latch is there; ours may have been set and finished"))
			case s.gen == "":
				// Never a latch: one is made with its gen- child in one
				// multi, and finished with it (a SharedCount at zero,
				// say): not ours to delete or replace.
				return fail(fmt.Errorf("%w: count %d and no %s child", zkrecipes.ErrBadData, s.remaining, genPrefix))
			case s.remaining > 0:
				return false, nil
			}
			if err := l.finish(ctx); err != nil {
				if l.transient(ctx, err) && p.Wait(ctx) {
					continue
				}
				return fail(fmt.Errorf("deleting the finished latch: %w", err))
			}
			continue
		}
		if maybe {
			// Ours was never made, or made and already finished: making
			// it again could set a second latch that nobody counts down.
			return fail(errors.New("no latch is there; ours may have been set and finished"))
		}
		if l.count == 0 {
			return true, nil
		}
		_, err = l.client.MultiOnce(ctx,
			&zk.CreateRequest{Path: l.path, Data: encode(l.count)},
			&zk.CreateRequest{Path: genPath, Data: l.id})
		var me *framework.MultiOpError
		switch {
		case err == nil:
			l.remember("", gen)
			return true, nil
		case errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, zk.ErrNodeExists):
			continue // set by someone else meanwhile: read it
		case errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, zk.ErrNoNode):
			if err := l.makeParent(ctx); err != nil {
				if l.transient(ctx, err) && p.Wait(ctx) {
					continue
				}
				return fail(err)
			}
			continue
		case me != nil:
			return fail(err)
		}
		if sent(err) {
			maybe = true
		}
		if l.transient(ctx, err) && p.Wait(ctx) {
			continue // the next read tells whether it was applied
		}
		return fail(err)
	}
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

// makeParent makes the latch's parent, and its own missing parents, as
// containers: the server deletes them once the latches in them are gone.
func (l *Countdown) makeParent(ctx context.Context) error {
	_, err := l.client.Create(ctx, framework.Parent(l.path), nil,
		framework.WithMode(framework.Container), framework.WithParentContainers())
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// CountDown counts the latch down by one, exactly once per call, and
// reports whether this call counted. It returns false with no error when
// there is nothing to count: no latch at path, or one already at zero (a
// no-op, as Redisson's countDown on an open latch). The call that takes
// the latch to zero deletes it (see the package doc).
//
// The multi that counts is sent at most once at a time; after a lost
// reply (a cut link, a session expiry, a server restart) CountDown waits
// for the link, reads the latch, and either finds its own cd- child
// (counted), or sends the same multi again, which cannot count twice. If
// the latch finished or went away while that outcome was unknown, or ctx
// ends after the multi may have reached the server, the error wraps
// zkrecipes.ErrOutcomeUnknown: the call may or may not have counted. A call that
// knows it counted deletes its cd- child before it returns (guaranteed:
// the client goes on in the background if the link is down).
func (l *Countdown) CountDown(ctx context.Context) (bool, error) {
	ctx, done, err := l.begin(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	mine := framework.Join(l.path, cdPrefix+uuid.NewString())
	p := l.client.RetryPolicy().Pacer()
	maybe := false     // a multi we sent may have been applied
	var sentGen string // the latch that multi was for
	fail := func(err error) (bool, error) { return false, l.fail(err, maybe) }
	synced := false
	for {
		if !synced {
			if err := l.sync(ctx); err != nil {
				if l.transient(ctx, err) && p.Wait(ctx) {
					continue
				}
				return fail(err)
			}
			synced = true
		}
		s, err := l.look(ctx)
		if err == nil && maybe {
			// Our marker says whether a multi of ours counted. Absent,
			// it may have gone with the latch meanwhile: the multi sent
			// next, built from the read above, then fails its check or
			// its version, and the read after it shows the latch gone.
			var counted bool
			if counted, _, err = l.client.Exists(ctx, mine); err == nil && counted {
				// Counted by a multi whose reply was lost, or resent.
				l.counted(ctx, mine, s.exists && s.remaining <= 0)
				return true, nil
			}
		}
		if err != nil {
			if l.transient(ctx, err) && p.Wait(ctx) {
				continue
			}
			return fail(err)
		}
		switch {
		case s.exists && s.gen == "":
			// Never a latch (see TrySetCount): not ours to count or delete.
			return fail(fmt.Errorf("%w: count %d and no %s child", zkrecipes.ErrBadData, s.remaining, genPrefix))
		case maybe && s.exists && s.gen != sentGen:
			// Another latch at the path: ours may have counted on the
			// one before it, which finished since. Counting on this one
			// too would count the call twice.
			return fail(errors.New("the latch was replaced while the count-down's outcome was unknown"))
		case !s.exists || s.remaining <= 0:
			if s.exists {
				_ = l.finish(ctx) // best effort: the next caller finishes it otherwise
			}
			if maybe {
				// Gone or at zero without our child: ours was never
				// applied, or applied and then deleted with the latch.
				return fail(errors.New("the latch finished while the count-down's outcome was unknown"))
			}
			return false, nil
		}
		sentGen = s.gen
		_, err = l.client.MultiOnce(ctx,
			&zk.CheckVersionRequest{Path: framework.Join(l.path, s.gen), Version: -1},
			&zk.CreateRequest{Path: mine, Data: l.id},
			&zk.SetDataRequest{Path: l.path, Data: encode(s.remaining - 1), Version: s.version})
		var me *framework.MultiOpError
		switch {
		case err == nil:
			l.remember("", s.gen)
			l.counted(ctx, mine, s.remaining == 1)
			return true, nil
		case errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, zk.ErrNoNode):
			// The latch this handle knew finished: learn the one there.
			l.remember(s.gen, "")
			p.Reset()
			continue
		case errors.As(err, &me) && me.Index == 1 && errors.Is(me.Err, zk.ErrNodeExists),
			errors.As(err, &me) && me.Index == 2 && errors.Is(me.Err, zk.ErrBadVersion):
			// Ours was applied already, or another count-down went
			// first: the next read tells which.
			p.Reset()
			continue
		case me != nil:
			return fail(err)
		}
		if sent(err) {
			maybe = true
		}
		if l.transient(ctx, err) && p.Wait(ctx) {
			continue
		}
		return fail(err)
	}
}

// counted ends a call that knows it counted: the latch is deleted if it is
// at zero, its marker with it; else the marker alone, which kept a resend
// of its multi from counting twice and told a call that lost a reply that
// it counted, and is of no more use. Both are best effort: a latch at
// zero is finished by the next caller, and a marker left behind (the
// client closed first) goes with the latch.
func (l *Countdown) counted(ctx context.Context, marker string, zero bool) {
	if zero {
		_ = l.finish(ctx)
		return
	}
	// Sent, not awaited: ZooKeeper applies it before whatever this
	// client sends next, and the client sends it again if the link
	// fails. Every copy of the multi that made the marker named a data
	// version the latch has left, so none can apply after this.
	_ = l.client.DeleteAsync(ctx, marker, -1)
}

// remember records that the handle's latch is now gen, if it was old
// ("": whatever it was).
func (l *Countdown) remember(old, gen string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old == "" || l.gen == old {
		l.gen = gen
	}
}

// Wait waits until the latch is open (Redisson's await): its count is
// zero, or there is no latch at path (never set, finished and deleted, or
// deleted by someone else, which opens it as Redisson's delete does), or
// the latch it found was replaced by another at the same path. It returns
// nil then, an error wrapping ctx's if ctx ends first, or one wrapping
// zkrecipes.ErrClosed after Close. It waits through cut links, session
// expiries and server restarts.
func (l *Countdown) Wait(ctx context.Context) error {
	ctx, done, err := l.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	p := l.client.RetryPolicy().Pacer()
	var czxid int64
	synced := false
	for {
		if !synced {
			if err := l.sync(ctx); err != nil {
				if l.transient(ctx, err) && p.Wait(ctx) {
					continue
				}
				return l.fail(err, false)
			}
			synced = true
		}
		opened, err := l.waitOnce(ctx, &czxid)
		if opened {
			return nil
		}
		if err == nil {
			p.Reset()
			continue
		}
		if l.transient(ctx, err) && p.Wait(ctx) {
			continue
		}
		return l.fail(err, false)
	}
}

// waitOnce reads the latch with a watch and, unless it is open, waits for
// the watch (or ctx). czxid is the latch being waited for, 0 before the first
// read.
func (l *Countdown) waitOnce(ctx context.Context, czxid *int64) (bool, error) {
	// The watch belongs to wctx: ended on return, it leaves nothing behind.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	data, st, watch, err := l.client.GetW(wctx, l.path)
	if errors.Is(err, zk.ErrNoNode) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if *czxid == 0 {
		*czxid = st.Czxid
	} else if st.Czxid != *czxid {
		return true, nil // ours finished and a new latch was set
	}
	n, err := decode(data)
	if err != nil {
		return false, err
	}
	if n <= 0 {
		return true, nil
	}
	select {
	case <-watch: // counted down, deleted, or the watch ended: read again
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
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

// state is one read of the latch.
type state struct {
	exists    bool
	remaining int
	version   int32 // path's data version at the read
	gen       string
	kids      []string
}

// look reads the latch for a count-down without listing it, whatever its
// count: path's count and version with one Get, and which latch it is from
// the handle's memory of the last one it set or counted on. The count-down
// multi checks that gen- child, so a latch replaced meanwhile fails it and
// is read again with a listing (read), as a handle's first count-down is,
// and a latch at zero, which only the listing may declare finished.
func (l *Countdown) look(ctx context.Context) (state, error) {
	l.mu.Lock()
	gen := l.gen
	l.mu.Unlock()
	if gen == "" {
		return l.read(ctx)
	}
	data, st, err := l.client.Get(ctx, l.path)
	if errors.Is(err, zk.ErrNoNode) {
		return state{}, nil
	}
	if err != nil {
		return state{}, err
	}
	n, err := decode(data)
	if err != nil {
		return state{}, err
	}
	if n <= 0 {
		return l.read(ctx)
	}
	return state{exists: true, remaining: n, version: st.Version, gen: gen}, nil
}

// read reads the latch's count and children as of one data version of
// path: a count-down changes both in one multi.
func (l *Countdown) read(ctx context.Context) (state, error) {
	for {
		data, st, err := l.client.Get(ctx, l.path)
		if errors.Is(err, zk.ErrNoNode) {
			return state{}, nil
		}
		if err != nil {
			return state{}, err
		}
		kids, kst, err := l.client.Children(ctx, l.path)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return state{}, err
		}
		if kst.Czxid != st.Czxid || kst.Version != st.Version {
			continue // changed between the two reads
		}
		n, err := decode(data)
		if err != nil {
			return state{}, err
		}
		s := state{exists: true, remaining: n, version: st.Version, kids: kids}
		for _, k := range kids {
			if strings.HasPrefix(k, genPrefix) {
				s.gen = k
			}
		}
		return s, nil
	}
}

// finish deletes a latch at zero: its children, then path at the version
// that holds zero, so that a latch set anew meanwhile is never touched
// (its children have other names, and it has another version or a gen-
// child that keeps the delete of path from applying).
//
// Callers that counted delete their own cd- children meanwhile: a
// child's delete that finds it gone is dropped from the multi and the
// rest sent again. No cd- child is made once the count is zero (each
// count-down sets the count at the version it read above zero), so that
// ends.
func (l *Countdown) finish(ctx context.Context) error {
	var err error
	for range 5 {
		var s state
		s, err = l.read(ctx)
		if err != nil || !s.exists || s.remaining > 0 {
			return err
		}
		if s.gen == "" {
			return fmt.Errorf("%w: no %s child", zkrecipes.ErrBadData, genPrefix)
		}
		var cds []string
		for _, k := range s.kids {
			switch {
			case k == s.gen:
			case strings.HasPrefix(k, cdPrefix):
				cds = append(cds, k)
			default:
				// Someone else's node under the latch: deleting the latch
				// would take it too.
				return fmt.Errorf("%w: a child %q that no latch makes", zkrecipes.ErrBadData, k)
			}
		}
		for len(cds) > deleteBatch {
			if err = l.deleteKids(ctx, cds[:deleteBatch]); err != nil {
				break
			}
			cds = cds[deleteBatch:]
		}
		if err != nil {
			continue
		}
		// The gen- child goes last, with path: it says "a latch", not
		// "finished".
		if err = l.deleteKids(ctx, cds,
			&zk.DeleteRequest{Path: framework.Join(l.path, s.gen), Version: -1},
			&zk.DeleteRequest{Path: l.path, Version: s.version},
		); err == nil {
			return nil
		}
		// Someone else deleted the latch, or it changed: read again.
	}
	return err
}

// deleteKids deletes the latch's cd- children names, and then the ops
// after, in one multi, sent again without each child found gone (deleted
// by the call that made it).
func (l *Countdown) deleteKids(ctx context.Context, names []string, after ...any) error {
	names = slices.Clone(names)
	for {
		ops := append(deletes(l.path, names), after...)
		if len(ops) == 0 {
			return nil
		}
		_, err := l.client.Multi(ctx, ops...)
		var me *framework.MultiOpError
		if !errors.As(err, &me) || me.Index >= len(names) || !errors.Is(me.Err, zk.ErrNoNode) {
			return err
		}
		names = slices.Delete(names, me.Index, me.Index+1)
	}
}

func deletes(parent string, names []string) []any {
	ops := make([]any, 0, len(names)+1)
	for _, n := range names {
		ops = append(ops, &zk.DeleteRequest{Path: framework.Join(parent, n), Version: -1})
	}
	return ops
}

// begin checks the handle and ctx before anything is sent, and returns a
// context that also ends with Close.
func (l *Countdown) begin(ctx context.Context) (context.Context, func(), error) {
	if err := l.usable(); err != nil {
		return nil, nil, err
	}
	if ctx == nil {
		return nil, nil, framework.RecipeErr(recipe, l.path, zkrecipes.ErrNilContext)
	}
	if l.isClosed() {
		return nil, nil, framework.RecipeErr(recipe, l.path, zkrecipes.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, framework.RecipeErr(recipe, l.path, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(l.life, cancel)
	return cctx, func() { stop(); cancel() }, nil
}

// fail gives err the module's sentinels, zkrecipes.ErrClosed after Close
// (the handle's or the client's) and zkrecipes.ErrOutcomeUnknown if a
// write may have been applied, and names the latch.
func (l *Countdown) fail(err error, maybe bool) error {
	err = engine.Err(err, l.isClosed())
	if maybe && !errors.Is(err, zkrecipes.ErrOutcomeUnknown) {
		err = fmt.Errorf("%w: %w", zkrecipes.ErrOutcomeUnknown, err)
	}
	return framework.RecipeErr(recipe, l.path, err)
}

// transient reports whether err is one a call outlives by waiting for the
// link: the session or the connection failed, not the request.
func (l *Countdown) transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil || l.isClosed() || errors.Is(err, zkrecipes.ErrClosed) {
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
