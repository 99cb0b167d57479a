package group

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
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
	// Changed: a member's payload was set (its node's data version
	// moved). A member whose node was made again (after its session
	// ended) Left and Joined.
	Changed
	// Stale: the view of the members may be stale from now on (Err says
	// why: the link dropped, the session was lost); Curator's
	// stateChanged.
	Stale
	// Current: the view was read again after a Stale and is current; the
	// changes meanwhile came before it.
	Current
)

func (k Kind) String() string {
	switch k {
	case Joined:
		return "joined"
	case Left:
		return "left"
	case Changed:
		return "changed"
	case Stale:
		return "stale"
	case Current:
		return "current"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Event is one change of the group, as Subscribe delivers it.
type Event struct {
	Kind Kind
	// ID and Payload are the member's (its last payload, for Left); empty
	// for Stale and Current.
	ID      string
	Payload []byte
	// Err says why the view may be stale (Stale only): it wraps
	// zkrecipes.ErrStale and the reason.
	Err error
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
	rt     *framework.Runtime

	mu   sync.Mutex
	view *cache.Cache
	// feed is published under mu, with known and stale, the members and
	// the staleness its subscribers were told of: a new subscription
	// begins with them (Subscribe).
	feed  framework.Feed[Event]
	known map[string]cache.Node
	stale error
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
	return &Member{client: client, path: path, id: id, node: node, rt: framework.NewRuntime(client, recipe, path)}, nil
}

func (m *Member) usable() error {
	if m == nil || m.rt == nil {
		return framework.Invalid(recipe, "Member", "New")
	}
	return nil
}

func (m *Member) err(err error) error { return m.rt.Err(err) }

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
	return m.rt.Start(ctx, m.begin)
}

// begin makes this member's node and reads the members; if either fails,
// it undoes both.
func (m *Member) begin(ctx context.Context) error {
	view, err := cache.New(m.client, m.path, cache.Children())
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.view = view
	node := m.node
	m.mu.Unlock()
	err = node.Start(ctx)
	if err == nil {
		err = view.Start(ctx)
	}
	if err == nil {
		// Subscribed once the view is read, its Snapshot applied before
		// Start returns: a subscriber that comes next is told the members
		// Start read.
		sub := view.Subscribe()
		m.mu.Lock()
		m.apply(<-sub.Changes())
		m.mu.Unlock()
		if m.rt.Go(func(life context.Context) { m.forward(life, sub) }) {
			return nil
		}
		sub.Close()
		err = zkrecipes.ErrClosed
	}
	_ = node.Close()
	_ = view.Close()
	m.mu.Lock()
	m.view = nil
	if !m.rt.Closed() {
		// A Node that failed to start can start again; one closed
		// cannot, so the Member gets a fresh one.
		m.node, _ = persistent.New(m.client, framework.Join(m.path, m.id), node.Data())
	}
	m.mu.Unlock()
	return unwrapCache(err)
}

// forward turns the cache's events into the group's, until the cache's
// subscription or life ends. It keeps the members it reported (known), so that an
// Overflow (the whole view in place of the events missed) becomes the
// joins, leaves and changes between the two.
func (m *Member) forward(life context.Context, sub *framework.Subscription[cache.Event]) {
	// Closed here: a reader gone at Close would leave the subscription's
	// queue undrained, and its goroutine waiting.
	defer sub.Close()
	for {
		select {
		case ev, ok := <-sub.Changes():
			if !ok {
				return
			}
			m.mu.Lock()
			m.apply(ev)
			m.mu.Unlock()
		case <-life.Done():
			return
		}
	}
}

// apply publishes what ev changes; called with m.mu held.
func (m *Member) apply(ev cache.Event) {
	if m.known == nil {
		m.known = map[string]cache.Node{}
	}
	known := m.known
	switch ev.Type {
	case cache.Created:
		m.joined(ev.Node)
	case cache.Changed:
		known[IDFromPath(ev.Node.Path)] = ev.Node
		m.feed.Publish(Event{Kind: Changed, ID: IDFromPath(ev.Node.Path), Payload: ev.Node.Data})
	case cache.Deleted:
		m.left(ev.Node)
	case cache.Stale:
		m.stale = ev.Err
		m.feed.Publish(Event{Kind: Stale, Err: ev.Err})
	case cache.Current:
		m.stale = nil
		m.feed.Publish(Event{Kind: Current})
	case cache.Snapshot, cache.Overflow:
		now := make(map[string]cache.Node, len(ev.Nodes))
		for _, n := range ev.Nodes {
			now[IDFromPath(n.Path)] = n
		}
		for _, id := range sortedIDs(known) {
			if n, ok := now[id]; !ok || n.Stat.Czxid != known[id].Stat.Czxid {
				m.left(known[id])
			}
		}
		for _, id := range sortedIDs(now) {
			n := now[id]
			old, ok := known[id]
			switch {
			case !ok:
				m.joined(n)
			case n.Stat.Mzxid != old.Stat.Mzxid:
				known[id] = n
				m.feed.Publish(Event{Kind: Changed, ID: id, Payload: n.Data})
			}
		}
		if (ev.Err == nil) != (m.stale == nil) {
			m.apply(cache.Event{Type: staleOrCurrent(ev.Err), Err: ev.Err})
		}
	}
}

func staleOrCurrent(err error) cache.EventType {
	if err != nil {
		return cache.Stale
	}
	return cache.Current
}

func (m *Member) joined(n cache.Node) {
	id := IDFromPath(n.Path)
	m.known[id] = n
	m.feed.Publish(Event{Kind: Joined, ID: id, Payload: n.Data})
}

func (m *Member) left(n cache.Node) {
	id := IDFromPath(n.Path)
	delete(m.known, id)
	m.feed.Publish(Event{Kind: Left, ID: id, Payload: n.Data})
}

func sortedIDs(nodes map[string]cache.Node) []string {
	ids := make([]string, 0, len(nodes))
	for id := range nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// unwrapCache returns the reason inside an error of the cache, so that
// the group's error names the group once ("group member /g: may be
// stale: suspended"), not the group and then its cache.
func unwrapCache(err error) error {
	var re *framework.RecipeError
	if errors.As(err, &re) && re.Recipe == "cache" {
		return re.Err
	}
	return err
}

// Set changes this member's payload (Curator's setThisData), now and for
// every re-creation of its node; it returns once it is on the node.
func (m *Member) Set(ctx context.Context, payload []byte) error {
	if err := m.usable(); err != nil {
		return err
	}
	if err := m.rt.Check(ctx); err != nil {
		return err
	}
	return m.err(m.ownNode().Set(ctx, payload))
}

// Members returns every member's payload by id, as Curator's
// getCurrentMembers: from the view this Member follows, with this member
// always in it (with its own payload) even before its node shows. The
// error is nil while the view is current; otherwise it wraps
// zkrecipes.ErrStale and the reason (zkrecipes.ErrSuspended,
// zkrecipes.ErrSessionLost, or nothing more while the view is read again
// after a gap), and the view is returned all the same.
func (m *Member) Members() (map[string][]byte, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	if err := m.rt.Ready(context.Background()); err != nil {
		return nil, err
	}
	m.mu.Lock()
	view := m.view
	m.mu.Unlock()
	nodes, err := view.Children(m.path)
	if err != nil {
		return nil, m.err(unwrapCache(err))
	}
	out := make(map[string][]byte, len(nodes)+1)
	for _, n := range nodes {
		out[IDFromPath(n.Path)] = n.Data // Children's Data is a copy of our own
	}
	if _, ok := out[m.id]; !ok {
		out[m.id] = m.ownNode().Data()
	}
	return out, m.err(unwrapCache(view.Err()))
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

// Subscribe returns the group as it stands, then its changes: first a
// Joined for each member known now (in id order; none before Start has
// read them) and a Stale if the view may be stale, then every member that
// joined, left, or changed its payload, in the order they were seen, and
// Stale and Current as the view stops and starts being current. Several
// changes of one member between two reads arrive as their net effect; a
// member's node made again is a Left and then a Joined. The members it
// begins with do not count against its bound. A reader that falls more than framework.DefaultBound
// changes behind is told, never skipped silently: the subscription ends,
// its Err wrapping zkrecipes.ErrFellBehind (docs/vocabulary.md).
func (m *Member) Subscribe() *framework.Subscription[Event] {
	if m.usable() != nil {
		var f framework.Feed[Event]
		f.End(nil)
		return f.Subscribe()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var now []Event
	for _, id := range sortedIDs(m.known) {
		now = append(now, Event{Kind: Joined, ID: id, Payload: m.known[id].Data})
	}
	if m.stale != nil {
		now = append(now, Event{Kind: Stale, Err: m.stale})
	}
	return m.feed.SubscribeWith(now...)
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
	return m.rt.Close(func(context.Context) error {
		m.mu.Lock()
		view, node := m.view, m.node
		m.mu.Unlock()
		_ = node.Close()
		if view != nil {
			_ = view.Close()
		}
		m.feed.End(nil)
		return nil
	})
}
