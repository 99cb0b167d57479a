package barrier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/engine"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/retry"
)

// readyNode is Curator's name for the node that says "memberQty arrived".
const readyNode = "ready"

// DoubleBarrier is one member of Curator's DistributedDoubleBarrier: Enter
// returns once memberQty members have arrived, Leave once every member
// has left. Enter and Leave alternate: Leave needs a successful Enter, and
// a DoubleBarrier that left may Enter again (with a new node), on the same
// path round after round (see the package doc). A DoubleBarrier is safe
// for concurrent use, but runs one Enter or Leave at a time.
type DoubleBarrier struct {
	client *framework.Client
	path   string
	ready  string
	qty    int
	data   []byte
	// rt is the member's closed state (read under mu with the state
	// below: see Close), and ends the calls under way at Close.
	rt *framework.Runtime

	mu    sync.Mutex
	state memberState
	name  string // our node's name while entering or entered
	owner int64  // the session that made it, once known
	round int64  // the czxid of our round's ready node, while entered
	// dropped are the names of our nodes of earlier calls whose delete
	// may not have landed yet (it went on in the background): the next
	// Enter deletes them first, so that none of ours counts twice.
	dropped []string
}

type memberState int

const (
	idle memberState = iota
	entering
	entered
	leaving
)

// NewDouble returns a member of the double barrier at path for memberQty
// members (at least 1). It sends nothing.
func NewDouble(client *framework.Client, path string, memberQty int, opts ...Option) (*DoubleBarrier, error) {
	if client == nil {
		return nil, framework.RecipeErr(doubleRecipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(doubleRecipe, path, err)
	}
	if memberQty < 1 {
		return nil, framework.RecipeErr(doubleRecipe, path, fmt.Errorf("%w: memberQty %d, must be at least 1", zkrecipes.ErrInvalidArgument, memberQty))
	}
	// A member's node's data (Enter), the longest name the id goes with.
	id, err := participantID(doubleRecipe, path, opts, func(id []byte) error {
		return client.CheckCreate(framework.Join(path, uuid.NewString()), id, framework.WithMode(framework.Ephemeral))
	})
	if err != nil {
		return nil, err
	}
	return &DoubleBarrier{
		client: client, path: path, ready: framework.Join(path, readyNode), qty: memberQty,
		data: []byte(id), rt: framework.NewRuntime(client, doubleRecipe, path),
	}, nil
}

// Path returns the barrier's path ("" for a nil DoubleBarrier).
func (d *DoubleBarrier) Path() string {
	if d == nil {
		return ""
	}
	return d.path
}

// MemberQty returns the number of members the barrier waits for.
func (d *DoubleBarrier) MemberQty() int {
	if d == nil {
		return 0
	}
	return d.qty
}

// usable says why d cannot be used: it is nil or a zero DoubleBarrier.
func (d *DoubleBarrier) usable() error {
	if d == nil || d.rt == nil {
		return framework.Invalid(doubleRecipe, "DoubleBarrier", "NewDouble")
	}
	return nil
}

// named names the barrier in err.
func (d *DoubleBarrier) named(err error) error { return framework.RecipeErr(doubleRecipe, d.path, err) }

// Node returns the path of this member's node while it is entering or
// entered, else "".
func (d *DoubleBarrier) Node() string {
	if d.usable() != nil {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.name == "" {
		return ""
	}
	return framework.Join(d.path, d.name)
}

// Close ends this member: an Enter or Leave under way and every later call
// return zkrecipes.ErrClosed. It deletes this member's node, if it has one
// (guaranteed, in the background: it belongs to this member's session),
// and leaves the barrier's directory and ready node to the other members.
// The client is not closed. It is idempotent and returns nil (an error
// only for a nil or zero DoubleBarrier).
//
// No node of an Enter that races Close is left behind. The Runtime is
// marked closed before Close ends the calls under way and before its
// release takes mu; an Enter reads rt.Closed() under mu in the same step
// as it turns entering into entered (enterCall). So either that step
// comes first, and the release finds the member entered and deletes its
// node, or it comes after the mark and sees the member closed, and
// deletes the node itself. A member still entering when the release runs
// is left to its Enter, which takes that step later, after the mark. A
// Leave under way deletes its node itself when it returns.
func (d *DoubleBarrier) Close() error {
	if err := d.usable(); err != nil {
		return err
	}
	// The node's delete is bounded by the client's release timeout
	// (engine.Leave), or goes on in the background (framework.Deferred).
	return d.rt.Close(func(context.Context) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.state == entered {
			d.dropLocked()
		}
		return nil
	})
}

// dropLocked forgets our node and deletes it, guaranteed, keeping its name
// among the dropped until the next Enter has seen it gone. A node whose
// owner is not known yet may be anyone's of ours: its name is new, so it
// is deleted whoever owns it.
func (d *DoubleBarrier) dropLocked() {
	if d.name != "" {
		node := framework.Join(d.path, d.name)
		if d.owner != 0 {
			_ = engine.Leave(d.client, node, d.owner)
		} else {
			_ = d.client.Delete(context.Background(), node, -1, framework.Deferred())
		}
		d.dropped = append(d.dropped, d.name)
	}
	d.state, d.name, d.owner, d.round = idle, "", 0, 0
}

// goneErr says why our node is not there: the session that made it is
// over (the client, or go-zookeeper underneath, which may be ahead of it,
// is on another one, or has given it up), or someone deleted it.
func (d *DoubleBarrier) goneErr(name string) error {
	d.mu.Lock()
	owner := d.owner
	d.mu.Unlock()
	s := d.client.Session()
	if owner != 0 && (s.ID != owner || closedCh(s.Lost)) {
		return fmt.Errorf("member %s: %w", name, zkrecipes.ErrSessionLost)
	}
	return fmt.Errorf("member %s: %w", name, zkrecipes.ErrNodeDeleted)
}

// sessionGone reports whether the client is on another session than the
// one that made our node (or on none: it was lost), so the node is gone.
func (d *DoubleBarrier) sessionGone() bool {
	d.mu.Lock()
	owner := d.owner
	d.mu.Unlock()
	return owner != 0 && d.client.Session().ID != owner
}

// sessionLost is closed when session owner is lost, or at once if the
// client is on another session already.
func (d *DoubleBarrier) sessionLost(owner int64) <-chan struct{} {
	s := d.client.Session()
	if s.ID != owner {
		return closedEvents2
	}
	return s.Lost
}

// closed reports whether the member or its client is closed: then a
// request that failed, or a wait that ended, ended for that.
func (d *DoubleBarrier) closed() bool { return d.rt.Closed() || d.client.Closed() }

// fail is the error of a step under ctx, Within's context, that failed
// with err.
func (d *DoubleBarrier) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	return waitErr(ctx, engine.Err(err, d.closed()))
}

// sleep waits p, or until lost is closed, under ctx, Within's context;
// it says why ctx ended, if it did (stopped).
func (d *DoubleBarrier) sleep(ctx context.Context, p time.Duration, lost <-chan struct{}) error {
	t := time.NewTimer(p)
	defer t.Stop()
	select {
	case <-t.C:
	case <-lost:
	case <-ctx.Done():
	}
	return stopped(ctx, d.closed())
}

// transient: worth looking again on the same member node. A session
// expiry is not (the node is gone), but the next listing says so itself.
func transient(err error) bool {
	return retry.Retryable(err) || errors.Is(err, zk.ErrSessionExpired)
}

// members are the member nodes of a listing, sorted as Curator sorts them.
func members(kids []string) []string {
	ms := make([]string, 0, len(kids))
	for _, k := range kids {
		if k != readyNode {
			ms = append(ms, k)
		}
	}
	slices.Sort(ms)
	return ms
}

// closedEvents and closedEvents2 are channels that are always ready.
var (
	closedEvents  = func() chan zk.Event { ch := make(chan zk.Event); close(ch); return ch }()
	closedEvents2 = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()
)
