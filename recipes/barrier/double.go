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
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/option"
	"github.com/zkrecipes/zkrecipes/retry"
)

// readyNode is Curator's name for the node that says "memberQty arrived".
const readyNode = "ready"

// DoubleBarrier is one member of Curator's DistributedDoubleBarrier: Enter
// returns once memberQty members have arrived, Leave once every member
// has left. Enter and Leave alternate: Leave needs a successful Enter, and
// a DoubleBarrier that left may Enter again (with a new node). A
// DoubleBarrier is safe for concurrent use, but runs one Enter or Leave at
// a time.
type DoubleBarrier struct {
	client  *framework.Client
	path    string
	ready   string
	qty     int
	data    []byte
	closing chan struct{}

	mu     sync.Mutex
	state  memberState
	name   string // our node's name while entering or entered
	owner  int64  // the session that made it, once known
	closed bool
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
		return nil, fmt.Errorf("double barrier: %w", zkrecipes.ErrInvalidArgument)
	}
	if err := framework.ValidatePath(path); err != nil {
		return nil, err
	}
	if memberQty < 1 {
		return nil, fmt.Errorf("double barrier: %w: memberQty %d, must be at least 1", zkrecipes.ErrInvalidArgument, memberQty)
	}
	cfg, err := option.Build("double barrier", []option.Name{option.ParticipantID}, opts)
	if err != nil {
		return nil, err
	}
	// A member's node's data (Enter), the longest name the id goes with.
	if err := cfg.CheckID("double barrier", path, func(id []byte) error {
		return client.CheckCreate(framework.Join(path, uuid.NewString()), id, framework.WithMode(framework.Ephemeral))
	}); err != nil {
		return nil, err
	}
	return &DoubleBarrier{
		client: client, path: path, ready: framework.Join(path, readyNode), qty: memberQty,
		data: cfg.ID, closing: make(chan struct{}),
	}, nil
}

// Path returns the barrier's path.
func (d *DoubleBarrier) Path() string { return d.path }

// MemberQty returns the number of members the barrier waits for.
func (d *DoubleBarrier) MemberQty() int { return d.qty }

// Node returns the path of this member's node while it is entering or
// entered, else "".
func (d *DoubleBarrier) Node() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.name == "" {
		return ""
	}
	return framework.Join(d.path, d.name)
}

// Enter makes this member's node and blocks until memberQty members have
// arrived (path/ready exists, or this member counts memberQty nodes and
// makes it). It fails with ctx's error when ctx ends first, zkrecipes.ErrClosed when
// the DoubleBarrier or its client is closed, zkrecipes.ErrSessionLost when the
// session that made the node is lost meanwhile (zkrecipes.ErrNodeDeleted when
// someone else deleted the node), ErrAlreadyEntered when entered already.
// Whenever it fails, the node is deleted (in the background if need be).
func (d *DoubleBarrier) Enter(ctx context.Context) error {
	d.mu.Lock()
	switch {
	case d.closed:
		d.mu.Unlock()
		return zkrecipes.ErrClosed
	case d.state != idle:
		d.mu.Unlock()
		return ErrAlreadyEntered
	}
	d.state, d.name, d.owner = entering, uuid.NewString(), 0
	name := d.name
	d.mu.Unlock()

	err := d.enter(ctx, name)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil && d.closed {
		// Close came as we entered; it left the node to us.
		err = zkrecipes.ErrClosed
	}
	if err != nil {
		d.dropLocked()
		return err
	}
	d.state = entered
	return nil
}

func (d *DoubleBarrier) enter(ctx context.Context, name string) error {
	node := framework.Join(d.path, name)
	_, err := d.client.Create(ctx, node, d.data, framework.WithMode(framework.Ephemeral), framework.WithParentContainers())
	// The name is new: a node already there is our own create, retried
	// after its reply was lost.
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		// The create may have been applied all the same.
		_ = d.client.DeleteLater(node, 0)
		return d.fail(ctx, err)
	}
	ok, st, err := d.client.Exists(ctx, node)
	if err != nil {
		_ = d.client.DeleteLater(node, 0)
		return d.fail(ctx, err)
	}
	if !ok {
		return fmt.Errorf("double barrier %s: %w: the new node %s went with its session", d.path, zkrecipes.ErrSessionLost, name)
	}
	d.mu.Lock()
	d.owner = st.EphemeralOwner
	d.mu.Unlock()
	clientClosing := d.client.Done()
	lost := d.sessionLost(st.EphemeralOwner)
	var pause time.Duration
	for {
		wctx, cancel := context.WithCancel(ctx)
		done, kidsChanged, readyChanged, err := d.enterOnce(wctx, name)
		if done || err != nil && !transient(err) {
			cancel()
			return err
		}
		if err != nil {
			cancel()
			pause = min(max(2*pause, 20*time.Millisecond), time.Second)
			if err := d.sleep(ctx, pause, nil); err != nil {
				return err
			}
			continue
		}
		pause = 0
		select {
		case <-kidsChanged:
		case <-readyChanged:
		case <-lost:
			// The next listing tells whether the node went with it. A
			// loss the client only declared may still end well: stop
			// listening for it, or it would wake us in a loop.
			lost = nil
		case <-ctx.Done():
		case <-d.closing:
		case <-clientClosing:
		}
		cancel()
		if err := d.stopped(ctx, clientClosing); err != nil {
			return err
		}
	}
}

// enterOnce looks once: is our node still there, and have memberQty
// arrived? Both watches are set before the answer, so no change after it
// is missed.
func (d *DoubleBarrier) enterOnce(ctx context.Context, name string) (done bool, kidsChanged, readyChanged <-chan zk.Event, err error) {
	kids, _, kidsChanged, err := d.client.ChildrenW(ctx, d.path)
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil, nil, d.goneErr(name) // our node held the directory up
	}
	if err != nil {
		return false, nil, nil, err
	}
	if !slices.Contains(kids, name) {
		return false, nil, nil, d.goneErr(name)
	}
	ready, _, readyChanged, err := d.client.ExistsW(ctx, d.ready)
	if err != nil {
		return false, nil, nil, err
	}
	if ready {
		return true, nil, nil, nil
	}
	if len(members(kids)) < d.qty {
		return false, kidsChanged, readyChanged, nil
	}
	_, err = d.client.Create(ctx, d.ready, d.data)
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return false, nil, nil, err
	}
	return true, nil, nil, nil
}

// Leave blocks until every member has left: it deletes this member's node
// in Curator's order and waits until no member node is left, then deletes
// path/ready. It fails with ErrNotEntered without a successful Enter,
// zkrecipes.ErrSessionLost when this member's session was lost since (its node is
// gone: it had stopped being a member, whatever it did meanwhile),
// zkrecipes.ErrNodeDeleted when someone else deleted the node, ctx's error when ctx
// ends first, zkrecipes.ErrClosed on Close. After any of these the member is not
// entered any more and its node is deleted.
func (d *DoubleBarrier) Leave(ctx context.Context) error {
	d.mu.Lock()
	switch {
	case d.closed:
		d.mu.Unlock()
		return zkrecipes.ErrClosed
	case d.state != entered:
		d.mu.Unlock()
		return ErrNotEntered
	}
	d.state = leaving
	name := d.name
	d.mu.Unlock()

	err := d.leave(ctx, name)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dropLocked()
	return err
}

func (d *DoubleBarrier) leave(ctx context.Context, name string) error {
	clientClosing := d.client.Done()
	ours := true // our node should still be there
	var pause time.Duration
	for {
		// Known locally, this needs no request: a member that wakes from a
		// long pause past its deadline still learns why it is out.
		if ours && d.sessionGone() {
			return d.goneErr(name)
		}
		wctx, cancel := context.WithCancel(ctx)
		done, changed, err := d.leaveOnce(wctx, name, &ours)
		if err != nil && transient(err) {
			cancel()
			pause = min(max(2*pause, 20*time.Millisecond), time.Second)
			if err := d.sleep(ctx, pause, nil); err != nil {
				return err
			}
			continue
		}
		if done || err != nil {
			cancel()
			if err == nil {
				// Everyone has left: the ready node must go, or the next
				// round's members would find it and enter at once.
				err = d.client.Delete(ctx, d.ready, -1, framework.Guaranteed())
				if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zkrecipes.ErrDeferred) {
					err = nil
				}
				err = d.fail(ctx, err)
			}
			return err
		}
		pause = 0
		select {
		case <-changed:
		case <-ctx.Done():
		case <-d.closing:
		case <-clientClosing:
		}
		cancel()
		if err := d.stopped(ctx, clientClosing); err != nil {
			return err
		}
	}
}

// leaveOnce is one step of Curator's leave, decided on a fresh listing.
// Unlike Curator, a member whose own node is gone waits until no member is
// left, rather than until one is: the one left may not have begun to leave.
func (d *DoubleBarrier) leaveOnce(ctx context.Context, name string, ours *bool) (done bool, changed <-chan zk.Event, err error) {
	kids, _, err := d.client.Children(ctx, d.path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return false, nil, err
	}
	ms := members(kids)
	if len(ms) == 0 {
		if *ours {
			return false, nil, d.goneErr(name)
		}
		return true, nil, nil
	}
	i := slices.Index(ms, name)
	if i < 0 && *ours {
		return false, nil, d.goneErr(name)
	}
	var watch string
	switch {
	case i == 0 && len(ms) == 1:
		if err := d.deleteOurs(name); err != nil {
			return false, nil, err
		}
		*ours = false
		return true, nil, nil
	case i == 0:
		watch = ms[len(ms)-1]
	default:
		if *ours {
			if err := d.deleteOurs(name); err != nil {
				return false, nil, err
			}
			*ours = false
		}
		watch = ms[0]
	}
	exists, _, changed, err := d.client.ExistsW(ctx, framework.Join(d.path, watch))
	if err != nil {
		return false, nil, err
	}
	if !exists {
		return false, closedEvents, nil // gone meanwhile: look again at once
	}
	return false, changed, nil
}

// deleteOurs deletes our node while it is our session's; ZooKeeper applies
// it before anything this client sends next.
func (d *DoubleBarrier) deleteOurs(name string) error {
	d.mu.Lock()
	owner := d.owner
	d.mu.Unlock()
	if err := contend.Leave(d.client, framework.Join(d.path, name), owner); err != nil {
		return err
	}
	d.mu.Lock()
	d.name, d.owner = "", 0 // nothing left to delete
	d.mu.Unlock()
	return nil
}

// Close ends this member: an Enter or Leave under way returns zkrecipes.ErrClosed,
// later calls too, and its node, if any, is deleted. It is idempotent.
func (d *DoubleBarrier) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	close(d.closing)
	if d.state == entered {
		d.dropLocked()
	}
	return nil
}

// dropLocked forgets our node and deletes it, guaranteed. A node whose
// owner is not known yet may be anyone's of ours: its name is new, so it
// is deleted whoever owns it.
func (d *DoubleBarrier) dropLocked() {
	if d.name != "" {
		node := framework.Join(d.path, d.name)
		if d.owner != 0 {
			_ = contend.Leave(d.client, node, d.owner)
		} else {
			_ = d.client.DeleteLater(node, 0)
		}
	}
	d.state, d.name, d.owner = idle, "", 0
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
		return fmt.Errorf("double barrier %s: member %s: %w", d.path, name, zkrecipes.ErrSessionLost)
	}
	return fmt.Errorf("double barrier %s: member %s: %w", d.path, name, zkrecipes.ErrNodeDeleted)
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

func (d *DoubleBarrier) stopped(ctx context.Context, clientClosing <-chan struct{}) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if closedCh(d.closing) || closedCh(clientClosing) {
		return zkrecipes.ErrClosed
	}
	return nil
}

func (d *DoubleBarrier) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	return waitErr(ctx, contend.Err(err, closedCh(d.closing)))
}

func (d *DoubleBarrier) sleep(ctx context.Context, p time.Duration, lost <-chan struct{}) error {
	t := time.NewTimer(p)
	defer t.Stop()
	select {
	case <-t.C:
	case <-lost:
	case <-ctx.Done():
	case <-d.closing:
	}
	return d.stopped(ctx, d.client.Done())
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
