package group

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/internal/childwatch"
	"github.com/zkrecipes/zkrecipes/internal/errs"
	"github.com/zkrecipes/zkrecipes/recipes/persistent"
)

const recipe = "group member"

// Kind is what happened to a member.
type Kind int

// The kinds of Event.
const (
	// Joined: a member's node appeared.
	Joined Kind = iota + 1
	// Left: a member's node went.
	Left
	// Changed: a member's payload changed, or its node was made again.
	Changed
)

func (k Kind) String() string {
	switch k {
	case Joined:
		return "joined"
	case Left:
		return "left"
	case Changed:
		return "changed"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Event is one change of the group, as Subscribe delivers it.
type Event struct {
	Kind Kind
	ID   string
	// Payload is the member's payload (its last, for Left).
	Payload []byte
}

// Member is Curator's GroupMember: this process's membership of a group
// (an ephemeral node kept in place, whatever happens to the session) and a
// view of every member. Make one with New; its methods may be called from
// any goroutine.
type Member struct {
	client *framework.Client
	path   string
	id     string
	node   *persistent.Node

	mu      sync.Mutex
	started bool
	closed  bool
	w       *childwatch.Watcher
	fwd     sync.WaitGroup
	feed    framework.Feed[Event]
}

// New returns this process's membership of the group at path, with id
// (one path segment: the member's node is path/id) and payload (Curator's
// default payload is the local address: framework.DefaultParticipantID).
// Nothing is sent before Start.
func New(client *framework.Client, path, id string, payload []byte) (*Member, error) {
	if client == nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: nil client", zkrecipes.ErrInvalidArgument))
	}
	if err := framework.ValidateRecipePath(path); err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	if id == "" || strings.Contains(id, "/") {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("%w: member id %q is not one path segment", zkrecipes.ErrInvalidArgument, id))
	}
	nodePath := framework.Join(path, id)
	if err := framework.ValidatePath(nodePath); err != nil {
		return nil, framework.RecipeErr(recipe, path, fmt.Errorf("member id %q: %w", id, err))
	}
	node, err := persistent.New(client, nodePath, payload)
	if err != nil {
		return nil, framework.RecipeErr(recipe, path, err)
	}
	return &Member{client: client, path: path, id: id, node: node}, nil
}

func (m *Member) usable() error {
	if m == nil || m.client == nil {
		return framework.RecipeErr(recipe, "", fmt.Errorf("%w: a nil or zero Member: make one with New", zkrecipes.ErrInvalidArgument))
	}
	return nil
}

func (m *Member) err(err error) error { return framework.RecipeErr(recipe, m.path, err) }

// Path returns the group's path.
func (m *Member) Path() string {
	if m == nil {
		return ""
	}
	return m.path
}

// ID returns this member's id.
func (m *Member) ID() string {
	if m == nil {
		return ""
	}
	return m.id
}

// Start joins the group (makes this member's node, kept in place until
// Close) and reads the members; it returns once both are done, or with
// ctx's error, leaving nothing behind (Start may then be called again).
func (m *Member) Start(ctx context.Context) error {
	if err := m.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return m.err(errs.ErrNilContext)
	}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return m.err(zkrecipes.ErrClosed)
	case m.started:
		m.mu.Unlock()
		return m.err(zkrecipes.ErrStarted)
	}
	m.started = true
	node := m.node
	w := childwatch.Start(m.client, m.path)
	m.w = w
	sub := w.Subscribe()
	m.fwd.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.fwd.Done()
		for ch := range sub.Changes() {
			for _, c := range ch.Added {
				m.feed.Publish(Event{Kind: Joined, ID: c.Name, Payload: c.Data})
			}
			for _, c := range ch.Updated {
				m.feed.Publish(Event{Kind: Changed, ID: c.Name, Payload: c.Data})
			}
			for _, c := range ch.Removed {
				m.feed.Publish(Event{Kind: Left, ID: c.Name, Payload: c.Data})
			}
		}
	}()
	err := node.Start(ctx)
	if err == nil {
		err = w.Wait(ctx)
	}
	if err != nil {
		_ = node.Close()
		w.Close()
		m.fwd.Wait()
		m.mu.Lock()
		closed := m.closed
		m.w, m.started = nil, false
		if !closed {
			// A Node that failed to start can start again; one closed
			// cannot, so the Member gets a fresh one.
			m.node, _ = persistent.New(m.client, framework.Join(m.path, m.id), node.Data())
		}
		m.mu.Unlock()
		return m.err(err)
	}
	return nil
}

// Set changes this member's payload (Curator's setThisData), now and for
// every re-creation of its node; it returns once it is on the node.
func (m *Member) Set(ctx context.Context, payload []byte) error {
	if err := m.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return m.err(errs.ErrNilContext)
	}
	return m.err(m.ownNode().Set(ctx, payload))
}

// Members returns every member's payload by id, as Curator's
// getCurrentMembers: from the view this Member follows, with this member
// always in it (with its own payload) even before its node shows. The
// error is nil while the view is current; otherwise it says why it may be
// stale (the view is returned all the same).
func (m *Member) Members() (map[string][]byte, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	w, closed := m.w, m.closed
	m.mu.Unlock()
	switch {
	case closed:
		return nil, m.err(zkrecipes.ErrClosed)
	case w == nil:
		return nil, m.err(zkrecipes.ErrNotStarted)
	}
	view, stale := w.View()
	out := make(map[string][]byte, len(view)+1)
	for _, c := range view {
		out[c.Name] = bytes.Clone(c.Data)
	}
	if _, ok := out[m.id]; !ok {
		out[m.id] = m.ownNode().Data()
	}
	return out, m.err(stale)
}

// IDs returns the ids of Members, sorted.
func (m *Member) IDs() ([]string, error) {
	members, err := m.Members()
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, err
}

// Status says whether this member's own node is in place (see
// persistent.Status).
func (m *Member) Status() persistent.Status {
	if err := m.usable(); err != nil {
		return persistent.Status{Err: err}
	}
	return m.ownNode().Status()
}

func (m *Member) ownNode() *persistent.Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.node
}

// Subscribe returns the group's changes from now on: a member joined,
// left, or changed its payload, in the order they were seen. Several
// changes of one member between two reads arrive as their net effect.
func (m *Member) Subscribe() *framework.Subscription[Event] {
	if m.usable() != nil {
		var f framework.Feed[Event]
		f.End(nil)
		return f.Subscribe()
	}
	return m.feed.Subscribe()
}

// IDFromPath returns the member id of a member node's path (Curator's
// idFromPath): its last segment.
func IDFromPath(path string) string { return framework.Base(path) }

// Close leaves the group (deletes this member's node) and stops following
// it, ending the subscriptions. It is idempotent.
func (m *Member) Close() error {
	if err := m.usable(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	w, node := m.w, m.node
	m.mu.Unlock()
	_ = node.Close()
	if w != nil {
		w.Close()
	}
	m.fwd.Wait()
	m.feed.End(nil)
	return nil
}
